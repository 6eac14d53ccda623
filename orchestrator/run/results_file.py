"""The shape of a run's ``results.json``: what the AgentBeats leaderboard query reads (the
participant and one leaderboard row), plus the benchmark's name and a row per instance.
The file is written from this model, and its JSON schema (in the documentation) comes from
it too."""

from __future__ import annotations

import re
from pathlib import PurePath

from pydantic import BaseModel, Field

from orchestrator.grading.classify import LeaderboardRow
from orchestrator.models import InstanceResult

BENCHMARK = "swe-bench-verified"
# file names that say nothing of the tasks they hold: the folder's name stands for them
_GENERIC_STEMS = {"instances", "tasks", "task-repo", "dataset", "data", "test", "train", "dev"}


def benchmark_name(dataset: str) -> str:
    """The ``benchmark`` a run's results name for the dataset setting ``dataset``: a Hugging
    Face benchmark's own name (an alias by its benchmark's), else the local file's or
    folder's name as a slug, its folder's where the file's says nothing
    (``sqlfluff-2026/tasks.jsonl`` -> ``sqlfluff-2026``)."""
    from orchestrator.dataset.task_repo import BENCHMARK_NAMES, DATASET_ALIASES

    name = DATASET_ALIASES.get(dataset.lower(), dataset)
    if name in BENCHMARK_NAMES:
        return BENCHMARK_NAMES[name][1]
    path = PurePath(name.rstrip("/"))
    stem = path.stem if path.suffix in {".jsonl", ".json", ".parquet"} else path.name
    if _slug(stem) in _GENERIC_STEMS and path.parent.name:
        stem = path.parent.name
    return _slug(stem) or "dataset"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class InstanceRow(BaseModel):
    """One instance of the run: its verdict and its test counts."""

    instance_id: str
    repo: str = ""
    status: str = Field(description="The instance's status (see Statuses and reasons).")
    reason: str = Field(description="Why, for an error or a no_op; empty otherwise.")
    fail_to_pass_passed: int
    fail_to_pass_total: int
    pass_to_pass_passed: int
    pass_to_pass_total: int

    @classmethod
    def of(cls, result: InstanceResult) -> InstanceRow:
        tests = result.tests
        return cls(
            instance_id=result.instance_id,
            repo=result.repo,
            status=result.status.value,
            reason=result.reason.value,
            fail_to_pass_passed=len(tests.fail_to_pass_passed),
            fail_to_pass_total=len(tests.fail_to_pass_passed) + len(tests.fail_to_pass_failed),
            pass_to_pass_passed=len(tests.pass_to_pass_passed),
            pass_to_pass_total=len(tests.pass_to_pass_passed) + len(tests.pass_to_pass_failed),
        )


class ResultsFile(BaseModel):
    """``results.json``: ``participants`` maps the participant's role to its id; ``results``
    holds the one leaderboard row of the run."""

    participants: dict[str, str]
    results: list[LeaderboardRow]
    benchmark: str = Field(
        BENCHMARK,
        description="The dataset the run graded: its benchmark's name, or the local dataset's.",
    )
    instances: list[InstanceRow] = Field(default_factory=list)
