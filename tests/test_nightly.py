"""scripts/nightly under dash (POSIX sh): shard rotation by the day of the year (days 008 and
100 included), comparison with the last run of the same shard, the verdict first, honest exit
statuses. A stand-in swe-green records what it is asked; one container test runs the real
CLI on the synthetic instances for two nights of the same shard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
NIGHTLY = REPO_ROOT / "scripts" / "nightly"
DASH = shutil.which("dash")

STUB = """#!/bin/sh
# a stand-in swe-green: records its arguments; run makes a run directory
echo "$*" >> "$STUB_LOG"
if [ "$1" = run ]; then
  while [ $# -gt 0 ]; do
    [ "$1" = --output ] && out=$2
    shift
  done
  if [ "${STUB_RUN_EXIT:-0}" != 2 ]; then
    mkdir -p "$out/instances" && echo '{}' > "$out/results.json"
  fi
  echo "run output that the mail does not start with"
  exit "${STUB_RUN_EXIT:-0}"
fi
if [ "$1" = report ]; then
  case "$*" in
    *--compare*) echo "VERDICT of $2 against $4"; exit "${STUB_COMPARE_EXIT:-0}" ;;
  esac
  echo "REPORT of $2"
fi
"""

pytestmark = pytest.mark.skipif(DASH is None, reason="dash is not installed")


def _night(tmp_path: Path, date: str, *extra: str, **env: str) -> subprocess.CompletedProcess:
    stub = tmp_path / "swe-green"
    if not stub.exists():
        stub.write_text(STUB)
        stub.chmod(0o755)
    return subprocess.run(
        [DASH, str(NIGHTLY), "--participant", "http://agent:9019/", "--date", date, *extra],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "SWE_GREEN": str(stub), "STUB_LOG": str(tmp_path / "calls"),
             "SWE_GREEN_NIGHTLY_DIR": str(tmp_path / "nightly"), **env},
    )  # fmt: skip


def _calls(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "calls").read_text().splitlines()
    (tmp_path / "calls").unlink()
    return lines


@pytest.mark.parametrize(
    ("date", "shard"),
    [("2026-01-08", 4), ("2026-01-09", 5), ("2026-01-18", 4), ("2026-04-10", 1),
     ("2026-01-01", 2), ("2026-12-31", 1), ("2028-12-31", 2)],
)  # fmt: skip
def test_the_shard_rotates_with_the_day_of_the_year(tmp_path, date, shard):
    # 2026-01-08 is day 008 (an octal error in $(( ))), 2026-04-10 day 100, 2028 a leap year
    done = _night(tmp_path, date)
    assert done.returncode == 0, done.stderr
    run, report = _calls(tmp_path)
    assert f"--shard {shard}/5" in run and "--participant http://agent:9019/" in run
    assert f"/shard-{shard}-of-5/{date}T" in run
    assert done.stdout.startswith(f"first run of shard {shard}/5 ({date})"), done.stdout
    assert report.startswith("report ") and "--html" in report and "--compare" not in report


def test_each_shard_is_compared_with_its_own_last_run(tmp_path):
    # days 003 and 008 are both shard 4 of 5; day 005 (shard 1) in between is not compared
    assert _night(tmp_path, "2026-01-03").returncode == 0
    assert _night(tmp_path, "2026-01-05").returncode == 0
    _calls(tmp_path)
    done = _night(tmp_path, "2026-01-08", "--", "--repo", "demo/units")
    assert done.returncode == 0, done.stderr
    run, report = _calls(tmp_path)
    assert run.endswith("--shard 4/5 --repo demo/units")
    tonight, previous = report.split()[1], report.split()[3]
    assert "/shard-4-of-5/2026-01-08T" in tonight and "/shard-4-of-5/2026-01-03T" in previous
    assert done.stdout.startswith("VERDICT of "), done.stdout  # the mail starts with it
    # a regression: exit 1, the verdict still first
    worse = _night(tmp_path, "2026-01-13", STUB_COMPARE_EXIT="1")
    assert worse.returncode == 1 and worse.stdout.startswith("VERDICT of "), worse.stdout
    assert "/shard-4-of-5/2026-01-08T" in _calls(tmp_path)[1]  # the last run of shard 4
    # one shard: the whole selection every night, compared with the night before
    assert _night(tmp_path, "2026-02-01", "--shards", "1").returncode == 0
    again = _night(tmp_path, "2026-02-02", "--shards", "1")
    assert again.returncode == 0 and again.stdout.startswith("VERDICT of ")
    calls = _calls(tmp_path)
    assert "--shard" not in calls[0] and "/shard-1-of-1/2026-02-01T" in calls[-1]


def test_a_night_that_fails_or_grades_nothing_says_so_first(tmp_path):
    failed = _night(tmp_path, "2026-03-01", STUB_RUN_EXIT="2")
    assert failed.returncode == 2
    assert failed.stdout.startswith("NIGHTLY FAILED: 2026-03-01, shard"), failed.stdout
    nothing = _night(tmp_path, "2026-03-01", STUB_RUN_EXIT="3")
    assert nothing.returncode == 3 and nothing.stdout.startswith("NOTHING GRADED"), nothing.stdout
    for bad in (["--shards", "0"], ["--shards", "x"], ["--date", "someday"]):
        done = _night(tmp_path, "2026-03-01", *bad)
        assert done.returncode == 2, (bad, done.stdout, done.stderr)
    no_participant = subprocess.run([DASH, str(NIGHTLY)], capture_output=True, text=True)
    assert no_participant.returncode == 2 and "usage" in no_participant.stderr


@pytest.mark.container
def test_two_nights_of_the_same_shard_with_the_real_cli(env_settings, tmp_path):
    """Days 001 and 004 are both shard 2 of 3 (one synthetic instance): gold, then the
    empty participant, is a regression the mail starts with."""
    from .conftest import cli_env

    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "200",
           "SWE_GREEN": str(Path(sys.executable).parent / "swe-green"),
           "SWE_GREEN_NIGHTLY_DIR": str(tmp_path / "nightly")}  # fmt: skip

    def night(date: str, participant: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [DASH, str(NIGHTLY), "--participant", participant, "--shards", "3", "--date", date],
            capture_output=True, text=True, timeout=900, env=env,
        )  # fmt: skip

    first = night("2026-01-01", "gold")
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.startswith("first run of shard 2/3 (2026-01-01)"), first.stdout
    second = night("2026-01-04", "empty")
    assert second.returncode == 1, second.stdout + second.stderr
    assert second.stdout.startswith("REGRESSED: 1 instance(s) no longer resolved"), second.stdout
    runs = sorted((tmp_path / "nightly" / "shard-2-of-3").glob("*T*[0-9]"))
    assert len(runs) == 2 and all((run / "report.html").is_file() for run in runs)
    results = json.loads((runs[1] / "results.json").read_text())
    assert "demo__" in json.dumps(results), results


def test_an_empty_shard_is_no_failure(synthetic_dir, tmp_path):
    """Five shards over the three synthetic instances: the real CLI finds shard 4 empty
    (before it needs Docker), and the night says so and exits 0."""
    env = {
        **os.environ,
        "SWE_GREEN": str(Path(sys.executable).parent / "swe-green"),
        "SWE_GREEN_NIGHTLY_DIR": str(tmp_path / "nightly"),
        "SWE_GREEN_DATA_DIR": str(tmp_path / "data"),
        "SWE_GREEN_RUNS_DIR": str(tmp_path / "runs"),
        "SWE_GREEN_DATASET": str(synthetic_dir / "instances.jsonl"),
    }
    done = subprocess.run(
        [DASH, str(NIGHTLY), "--participant", "gold", "--date", "2026-01-08"],  # shard 4/5
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("EMPTY SHARD: 2026-01-08, shard 4/5 holds no instance"), (
        done.stdout
    )
    assert not list((tmp_path / "nightly" / "shard-4-of-5").glob("*T*[0-9]")), "a run directory"
