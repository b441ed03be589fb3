"""The orchestration side's models, in one place: what flows hand each other and what lands in
the run directory as JSON.

    request.py   the bake-off request (the flow's one parameter), checked before anything starts
    plan.py      Discover's candidates, backend statuses and lane plan
    run.py       lanes, leases, reviews, the ranked report
    progress.py  run and lane progress files

No re-exports: import from the module that defines the model."""
