"""The Librarian agent (seed 003): one thinking step of an agentic evidence search per call.

evaluate (validate; ingest: dedup the history into a candidate pool; judge: sufficiency, missing
elements) → plan the next queries | select the minimal strongest evidence | fail.
"""
