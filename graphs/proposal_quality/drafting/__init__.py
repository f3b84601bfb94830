"""How a report is drafted: the embedded engine's Organizer and Advisor, and the model's draft.

The rules a draft must pass are not here: they are the validator's (`graphs/proposal_quality/validator.py`).
"""
