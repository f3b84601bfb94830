"""The Curator: deltas from a reflection (`heuristic` or `llm`), applied by the deterministic `merge`."""
