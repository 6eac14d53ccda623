"""Config of the repository cache (phase 1, :mod:`orchestrator.checkout`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from orchestrator.settings.base import ComponentConfig


class RepoConfig(ComponentConfig):
    """The repository cache (phase 1)."""

    repo_url_template: str = Field(
        "https://github.com/{repo}.git",
        min_length=1,
        description="Clone URL; {repo}=owner/name, {owner}, {name}, {owner_name}=owner__name.",
    )
    mirror_dir: Path | None = Field(
        None,
        description="Local directory of bare mirrors named owner__name.git; overrides the URL.",
    )
