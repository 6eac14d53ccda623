"""Config of validation: the gold patch's check of each environment
(:mod:`orchestrator.validation`)."""

from __future__ import annotations

from pydantic import Field

from orchestrator.settings.base import ComponentConfig


class ValidationConfig(ComponentConfig):
    """Validating each instance's environment with the gold patch."""

    validate_env: bool = Field(True, description="Validate each instance's environment first.")
    validation_runs: int = Field(
        1,
        ge=1,
        le=10,
        description="Times validation runs the tests with the gold patch; a test whose outcome "
        "differs between runs is flaky and left out of grading.",
    )
