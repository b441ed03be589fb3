"""The orchestration side: what the flows (flows/) call. One room per concern; where to add:

a backend        tasks/backends/ (one module, registered in its __init__)
a role           tasks/agents/roles/ (one module declaring ROLE)
a check rule     tasks/check/ (applied to every verdict on the trusted side)
a report section templates/ and tasks/report/
a model          tasks/models/ (what flows hand each other and what lands as JSON)

models/    the request, Discover's plan, lanes and the ranked report, progress
check/     the harness called on a leased device: checks, freezes, the device pool, deadlines,
           the review rules (standing.py), the one judgement (judgement.py), roofline floors
discover/  Discover's measurements, lane plan, resume and table
search/    spaces, strategies, the tuning loop
engine/    the lane engine: the search lane's loop over a backend's space (more to come)
agents/    role agents, their drivers, and the deterministic responders without a model
report/    ranking on the frozen baseline, report.md and report.html
run/       the run directory: store, lock, input identity
store/     the history database across runs
apply/     the winner onto a git branch of the original repository
campaign.py  rounds of lanes, each seeded from the best variant so far
"""
