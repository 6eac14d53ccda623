"""Config of the dataset (phase 0, :mod:`orchestrator.dataset`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field, field_validator

from orchestrator.settings.base import ComponentConfig


class DatasetConfig(ComponentConfig):
    """The instances (phase 0)."""

    dataset: str = Field(
        "princeton-nlp/SWE-bench_Verified",
        min_length=1,
        description="Hugging Face dataset name or alias (verified, full, lite), a local "
        ".jsonl/.json/.parquet file or a directory of them (its own files and those in its "
        "data/), or a SWE-bench 5.x task repository (a directory or git URL; Python tasks).",
    )
    dataset_split: str = Field("test", min_length=1, description="Dataset split to load.")
    created_after: str | None = Field(
        None,
        description="Only the instances created after this time (ISO 8601, e.g. 2025-06-01): "
        "tasks newer than a model's training cut-off. Instances without created_at are left out.",
    )

    @field_validator("created_after")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value.strip().replace("Z", "+00:00"))  # a ValueError names it
        return value
