"""Config of the LLM setup agent (the ``llm`` strategy,
:mod:`orchestrator.setup.agent`)."""

from __future__ import annotations

import os

from pydantic import Field

from orchestrator.settings.base import ComponentConfig


class SetupAgentConfig(ComponentConfig):
    """The LLM setup agent (the ``llm`` strategy)."""

    anthropic_api_key: str | None = Field(None, description="API key for the llm strategy.")
    anthropic_base_url: str | None = Field(None, description="Messages API base URL override.")
    setup_model: str = Field(
        "claude-sonnet-4-5", min_length=1, description="Model of the LLM setup agent."
    )
    setup_max_turns: int = Field(40, ge=1, description="LLM setup agent: max turns.")
    setup_max_tokens: int = Field(400_000, ge=1, description="LLM setup agent: max total tokens.")
    setup_timeout: float = Field(
        1800, gt=0, description="LLM setup agent: wall time limit, seconds."
    )

    def anthropic_key(self) -> str | None:
        """The API key from settings, or the SDK's usual ANTHROPIC_API_KEY."""
        return self.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")
