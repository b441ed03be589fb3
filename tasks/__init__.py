"""The orchestration side: what the flows (flows/) call. One room per concern; where to add:

a backend        tasks/backends/ (one module, registered in its __init__)
a role           tasks/agents/roles/ (one module declaring ROLE)
a proposer       tasks/engine/proposers.py (who makes a lane's candidates; drop-ins by name)
a check rule     tasks/check/ (applied to every verdict on the trusted side)
a report section templates/ and tasks/report/
a model          tasks/models/ (what flows hand each other and what lands as JSON)

models/    the request, Discover's plan, lanes and the ranked report, progress
check/     the harness called on a leased device: checks, freezes, the device pool, deadlines,
           the review rules (standing.py), the one judgement (judgement.py), roofline floors
discover/  Discover's measurements, lane plan, resume and table
search/    spaces, strategies, the tuning loop
engine/    the lane engine: every lane and Discover (lease, frozen task, checker, proposer,
           judgement, store), the search's loop, the one door to the model's room
agents/    the model's room (a leaf: reached by name): role agents and their drivers
report/    ranking on the frozen baseline, report.md and report.html
run/       the run directory (directory.py), lock, input identity; the API key's holder; settings
history/   the history database across runs
apply/     the winner onto a git branch of the original repository
campaign.py  rounds of lanes, each seeded from the best variant so far
"""
