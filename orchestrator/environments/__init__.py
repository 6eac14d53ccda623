"""Phases 1-4: the repository cache, recipes, the LLM setup agent, the environment build,
the image cache and environment validation."""
