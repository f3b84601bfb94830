"""Chat-model layer: provider configuration and factory, structured output with repair and usage accounting."""
