"""The Generator: an answer from the search hits, by the embedded rules (`heuristic`) or a model (`llm`)."""
