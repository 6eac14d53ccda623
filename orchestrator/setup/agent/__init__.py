"""The LLM setup agent: sets an environment up when no recipe does."""
