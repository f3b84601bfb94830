"""Chat-model layer: providers, the one model-call helper (`ask`), structured output, usage and reply checks."""
