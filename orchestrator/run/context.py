"""Moved to :mod:`orchestrator.context.run_context` (below the phases, which receive it).

Kept only for ``environments/validation.py``, whose owner switches its import; then this
module and its entry in the import-linter contracts (pyproject.toml) go.
"""

from orchestrator.context.run_context import RunContext

__all__ = ["RunContext"]
