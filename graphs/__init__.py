"""The agents (LangGraph graphs) and the machinery they share.

LLM and embedding providers, structured output, tokenisation, prompt loading, YAML configuration.
"""
