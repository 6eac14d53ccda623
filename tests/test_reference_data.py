"""The tests' own reference data: the excerpt in tests/fixtures is the reference data's, and
the caller's settings do not reach a test."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .conftest import SESSION_VARIABLES
from .reference_data import (
    ENVIRONMENTS,
    SHARED_DATA,
    SHARED_ENVIRONMENTS,
    SHARED_SPECS,
    SHARED_VERIFIED,
    SPECS,
    TEST_LOGS,
    shared_data,
    verified_rows,
)


def test_the_callers_settings_do_not_reach_a_test():
    """scripts/test exports bogus SWE_GREEN_MIRROR_DIR, SWE_GREEN_DATASET, ... for a unit run:
    none is seen here, and the settings file is one that does not exist."""
    seen = [
        name
        for name in os.environ
        if name.upper().startswith("SWE_GREEN_") and name.upper() not in SESSION_VARIABLES
    ]
    assert seen == ["SWE_GREEN_CONFIG"]
    assert not Path(os.environ["SWE_GREEN_CONFIG"]).exists()


@shared_data
def test_the_excerpt_is_whole_rows_of_verified_in_its_order():
    full = {row["instance_id"]: (n, row) for n, row in enumerate(verified_rows(SHARED_VERIFIED))}
    excerpt = verified_rows()
    assert [row == full[row["instance_id"]][1] for row in excerpt] == [True] * len(excerpt)
    order = [full[row["instance_id"]][0] for row in excerpt]
    assert order == sorted(order)


@shared_data
def test_the_specs_and_environments_are_the_reference_datas():
    full, excerpt = json.loads(SHARED_SPECS.read_text()), json.loads(SPECS.read_text())
    assert excerpt["source"] == full["source"] and excerpt["log_format"] == full["log_format"]
    for repo, versions in excerpt["specs"].items():
        for version, spec in versions.items():
            assert spec == full["specs"][repo][version], (repo, version)
    pairs = {(row["repo"], row["version"]) for row in verified_rows()}
    assert pairs == {(repo, v) for repo, versions in excerpt["specs"].items() for v in versions}
    for path in ENVIRONMENTS.glob("*.yml"):
        assert path.read_bytes() == (SHARED_ENVIRONMENTS / path.name).read_bytes(), path.name
    ids = {row["instance_id"] for row in verified_rows()}
    assert ids <= {path.stem for path in ENVIRONMENTS.glob("*.yml")}


@shared_data
def test_the_test_logs_are_the_reference_datas():
    logs = sorted(TEST_LOGS.glob("*.txt"))
    assert logs
    for path in logs:
        assert path.read_bytes() == (SHARED_DATA / "test-logs" / path.name).read_bytes()
