"""``images build`` stops at once on Ctrl-C or SIGTERM, and leaves no temporary root.

debootstrap is stood in for by a script that behaves as it does under a signal: it ignores
SIGINT and SIGTERM, and has a child of its own writing into the root file system."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from .conftest import run_cli

FAKE_DEBOOTSTRAP = """#!/bin/bash
trap '' INT TERM
target="$4"
mkdir -p "$target"
echo $$ >> "$PIDS"
( trap '' INT TERM; while true; do date >> "$target/stamp"; sleep 0.2; done ) &
echo $! >> "$PIDS"
touch "$target/started"
wait
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


@pytest.mark.skipif(os.geteuid() != 0, reason="the offline bootstrap runs as root")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_build_at_once_and_removes_its_root(
    tmp_path: Path, signum: signal.Signals
) -> None:
    bin_dir, tmp = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    tmp.mkdir()
    fake = bin_dir / "debootstrap"
    fake.write_text(FAKE_DEBOOTSTRAP)
    fake.chmod(0o755)
    pids = tmp_path / "pids"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        TMPDIR=str(tmp),
        PIDS=str(pids),
        SWE_GREEN_IMAGE_PREFIX=f"swe-green-test-{os.environ.get('SWE_GREEN_TEST_TAG', 'x')}",
    )
    proc = run_cli(
        ["images", "build", "--python", "3.11", "--method", "debootstrap", "--force"], env
    )
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob("swe-green-rootfs-*/rootfs/started")):
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the stand-in debootstrap never started"
            time.sleep(0.1)
        os.killpg(proc.pid, signum)  # as a terminal's Ctrl-C, or a service manager, does
        started = time.monotonic()
        output, _ = proc.communicate(timeout=10)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert took < 3, f"stopped after {took:.1f}s"
    assert proc.returncode == 130, output
    assert "Traceback" not in output, output
    assert not list(tmp.glob("swe-green-rootfs-*")), "the temporary root was left"
    time.sleep(0.5)
    left = [pid for pid in map(int, pids.read_text().split()) if _alive(pid)]
    for pid in left:  # not to leave them running when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"debootstrap's processes outlived the build: {left}"
