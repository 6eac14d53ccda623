"""Config of the dataset (phase 0, :mod:`orchestrator.dataset`)."""

from __future__ import annotations

from pydantic import Field

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
