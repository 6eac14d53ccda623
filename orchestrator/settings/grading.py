"""Config of grading: applying the patch and running the tests (phases 6-7,
:mod:`orchestrator.patches` and :mod:`orchestrator.grading`)."""

from __future__ import annotations

from pydantic import Field

from orchestrator.settings.base import ComponentConfig


class GradingConfig(ComponentConfig):
    """Applying the patch and running the tests (phases 6-7)."""

    patch_fuzz: int = Field(
        5,
        ge=0,
        le=100,
        description="patch -p1 --fuzz=N as the last apply strategy (the official harness: 5).",
    )
    test_timeout: float = Field(1800, gt=0, description="Seconds for one test run.")
    flaky_reruns: int = Field(
        3,
        ge=0,
        le=20,
        description="Times a test that decides the verdict against the patch (a PASS_TO_PASS "
        "failure, the only FAIL_TO_PASS failure) runs again alone, each with another hash "
        "seed; an outcome that changes marks the verdict flaky (0: never).",
    )
    twin_check: bool = Field(
        True,
        description="Check a verdict in which a FAIL_TO_PASS test passed with impossible twins "
        "(validation keeps the twins the gold patch fails; grading runs them in a fresh "
        "container, and a twin that passes counts its test as failing: twin_passed).",
    )
    wider_tests: bool = Field(
        False,
        description="Beside each resolved verdict, run the repository's tests that exercise "
        "what the patch changed (the test modules of its modules' packages and those that "
        "import them) in a fresh container, against the gold patch's two runs of them at "
        "validation: the regressions beyond the task's tests are reported, the verdict stays "
        "the official one.",
    )
    wider_max_files: int = Field(
        40,
        ge=1,
        le=10_000,
        description="Test modules at most in one wider run (the scope's nearest first; "
        "the number left out is reported).",
    )
    grade_in_participant_container: bool = Field(
        False,
        description="Grade in the participant's container instead of a fresh one "
        "(unsafe for untrusted participants: whatever they planted there runs in the tests).",
    )
    unprivileged_tests: bool = Field(
        True,
        description="Run the tests as an unprivileged user that can write only where "
        'validation saw the gold run\'s tests write (see "Grading, and what it guarantees"; '
        "false runs them as root).",
    )
