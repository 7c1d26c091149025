"""The report: its model, hazards, explanations, hints, and formats/ (every layout)."""
