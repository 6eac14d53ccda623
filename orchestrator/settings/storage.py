"""Config of the host's storage: the cache every component shares and the run directories."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from orchestrator.settings.base import ComponentConfig


class StorageConfig(ComponentConfig):
    """Where things live on the host."""

    data_dir: Path = Field(
        Path.home() / ".cache" / "swe-green",
        description="Host cache: repository mirrors, locks, image use, the leases of runs in "
        "progress (runs on one engine share it to see each other's leases).",
    )
    runs_dir: Path = Field(Path("runs"), description="Where run directories are written.")
