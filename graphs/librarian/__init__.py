"""The Librarian agent (seed 003): one thinking step of an agentic evidence search per call.

validate → ingest (dedup the history into a candidate pool) → evaluate (sufficiency, missing
elements) → plan the next queries | select the minimal strongest evidence | fail.
"""
