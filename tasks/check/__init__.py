"""Calling the harness (scripts/) from the orchestration side: checking a candidate and freezing
an input on a leased device, the device pool, the deadline a lane's checks honour, the rules
applied to every verdict (a candidate of language L must run L; standing.py: the review rules
and the frozen baseline's own spread), judgement.py (the one place a verdict becomes a standing:
every reviewer and the ranking call it) and the roofline floors they are read against. A new
check rule goes here."""
