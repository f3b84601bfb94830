"""The Reflector: insights and helpful/harmful/neutral tags, by rules (`heuristic`) or a model (`llm`, `prompt`)."""
