"""Candidate twins from the test files as the test patch leaves them (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from orchestrator.grading.twins.model import Twin, TwinCandidates
from orchestrator.models import Instance


def twin_candidates(
    instance: Instance, files: Mapping[str, str], *, per_test: int = 3
) -> TwinCandidates:
    """Up to ``per_test`` candidate twins for each FAIL_TO_PASS test of ``instance``;
    ``files`` maps each file the test patch touches (repository-relative path) to its text
    after the test patch."""
    raise NotImplementedError


def apply_twins(files: Mapping[str, str], twins: Sequence[Twin]) -> dict[str, str]:
    """``files`` with every twin's segment replaced (at most one twin per test function)."""
    raise NotImplementedError


def twin_test_patch(
    test_patch: str, base_files: Mapping[str, str | None], twins: Sequence[Twin],
    files: Mapping[str, str],
) -> str:  # fmt: skip
    """A patch that ``git apply`` takes at the base commit, as it takes ``test_patch``, and
    that leaves the files of ``apply_twins(files, twins)``; ``base_files`` are the files'
    texts at the base commit (None: the test patch creates it)."""
    raise NotImplementedError
