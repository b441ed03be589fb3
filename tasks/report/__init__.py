"""The report: ranking on the one frozen baseline and the winner rule (ranking.py), report.md
and the lane sheet from templates/ (render.py) and report.html (html.py). A new report section
goes in templates/ and the module that fills it."""
