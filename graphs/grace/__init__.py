"""GRACE (seed 002): plan-and-execute with confidence scoring, human-in-the-loop and replanning, one step per call."""
