"""Where the tests' reference data is.

The unit tests read the excerpt in ``tests/fixtures`` (24 Verified rows, their specs and frozen
environments, eight real test logs: ``tests/fixtures/README.md`` says where each comes from), so
that the suite runs in a clone alone. Tests over *every* Verified instance read the reference
data directory beside the checkout, ``../shared/data``, and are marked :data:`shared_data`:
``tests/conftest.py`` skips them, naming the directory, where it is absent."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VERIFIED = FIXTURES / "verified" / "swe-bench-verified.jsonl"
SPECS = FIXTURES / "verified" / "specs.json"
ENVIRONMENTS = FIXTURES / "verified" / "environments"
TEST_LOGS = FIXTURES / "test-logs"

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_VERIFIED = SHARED_DATA / "swe-bench-verified.jsonl"
SHARED_SPECS = SHARED_DATA / "swebench-specs" / "specs.json"
SHARED_ENVIRONMENTS = SHARED_DATA / "swebench-specs" / "environments"

shared_data = pytest.mark.shared_data


@cache
def _lines(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text(encoding="utf-8").splitlines())


def verified_rows(path: Path = VERIFIED) -> list[dict]:
    """The rows of a Verified file (the excerpt unless told), in the file's order: parsed anew
    at each call, for a test to change."""
    return [json.loads(line) for line in _lines(path)]


def verified_row(instance_id: str, path: Path = VERIFIED) -> dict:
    """One row of a Verified file (the excerpt unless told)."""
    for line in _lines(path):
        if f'"{instance_id}"' in line and (row := json.loads(line))["instance_id"] == instance_id:
            return row
    raise KeyError(f"{instance_id} is not in {path}")
