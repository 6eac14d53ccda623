"""Files the evaluator writes take the mode the umask gives (a team or a web server on a
nightly host reads the reports); a secret is written for its owner only."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.atomic import atomic_write_text, current_umask
from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report.html import write_html
from orchestrator.leases import hold_lease
from orchestrator.models import InstanceResult, Status
from orchestrator.run.leaderboard import write_leaderboard


@pytest.fixture(params=[0o022, 0o027, 0o077])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_current_umask_reads_without_changing(umask: int) -> None:
    assert current_umask() == umask
    assert current_umask() == umask


def test_run_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    run = RunDir(tmp_path / "run")
    result = InstanceResult(instance_id="demo__calc-1", repo="o/r", status=Status.RESOLVED)
    written = [
        run.write_config({"participant": "p"}),
        run.write_result(result),
        run.write_text("demo__calc-1", "patch.diff", "diff\n"),
        write_leaderboard(run, "agent", "p", [result]),
        write_html(run),
    ]
    with hold_lease(tmp_path / "data", "run-1") as lease:
        written.append(lease)
        for path in written:
            assert _mode(path) == 0o666 & ~umask, path


def test_a_private_file_is_the_owners_only(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "token"
    atomic_write_text(path, "secret", private=True)
    assert _mode(path) == 0o600
    assert path.read_text() == "secret"
