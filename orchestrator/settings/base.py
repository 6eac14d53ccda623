"""What every component's config model shares: the base model and reading a default."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class ComponentConfig(BaseModel):
    """A component's config: unknown keys are errors, assignments are validated too (a
    ``replace`` or a test's change is range-checked as loading is)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def default_of(config: type[BaseModel], name: str) -> Any:
    """The documented default of field ``name`` of ``config``: a component's own model of the
    same value (a sandbox's limits, a participant's) takes it from here, not a copy."""
    return config.model_fields[name].default
