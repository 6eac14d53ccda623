"""The shape of a run's ``results.json``: what the AgentBeats leaderboard query reads (the
participant and one leaderboard row), plus the benchmark's name and a row per instance.
The file is written from this model, and its JSON schema (in the documentation) comes from
it too."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.grading.classify import LeaderboardRow
from orchestrator.models import InstanceResult

BENCHMARK = "swe-bench-verified"


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
    benchmark: str = BENCHMARK
    instances: list[InstanceRow] = Field(default_factory=list)
