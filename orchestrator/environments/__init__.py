"""Phases 1-4 of an instance (``build.py``): checkout and the repository cache
(``checkout/``), the environment set-up (``setup/``, the LLM setup agent in ``setup/agent/``),
dependencies (``dependencies/``) and the base commit (``base_commit/``)."""
