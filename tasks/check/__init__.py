"""Calling the harness (scripts/) from the orchestration side: checking a candidate and freezing
an input on a leased device, the device pool, and the rules applied to every verdict (a
candidate of language L must run L). A new check rule goes here."""
