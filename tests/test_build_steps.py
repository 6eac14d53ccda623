"""A long build says what it does: each step announced with an estimate from the last build
on this host (or that there is none), a line while it runs (time so far, time left, what it
is doing), and at the end where the time went; the durations are the next build's estimates."""

from __future__ import annotations

import json
import time
from pathlib import Path

from orchestrator.setup.build_steps import Steps


def _build(record: Path, said: list[str], pause: float) -> Steps:
    steps = Steps("swe-green/base:py3.11", said.append, record, tick=0.05)
    with steps.step("debootstrap bookworm", doing=lambda: "I: Retrieving libc6"):
        time.sleep(pause)
    with steps.step("installing uv"):
        pass
    said.append(steps.summary())
    return steps


def test_a_first_build_says_it_has_no_estimate_and_records_the_steps(tmp_path: Path) -> None:
    said: list[str] = []
    record = tmp_path / "steps.json"
    _build(record, said, 0.2)
    assert said[0] == (
        "swe-green/base:py3.11: debootstrap bookworm (no earlier build here to estimate from)"
    )
    ticks = [line for line in said if "so far" in line]
    assert ticks and all(line.endswith("s so far (I: Retrieving libc6)") for line in ticks)
    assert said[-1].startswith("swe-green/base:py3.11: ") and " s in all: debootstrap" in said[-1]
    assert set(json.loads(record.read_text())) == {"debootstrap bookworm", "installing uv"}


def test_the_next_build_estimates_from_the_last_and_says_when_it_runs_longer(
    tmp_path: Path,
) -> None:
    record = tmp_path / "steps.json"
    record.write_text(json.dumps({"debootstrap bookworm": 0.1, "installing uv": 40}))
    said: list[str] = []
    steps = _build(record, said, 0.4)
    assert "debootstrap bookworm (about 0 s, as the last build here)" in said[0]
    assert any("longer than the last build's 0 s" in line for line in said)
    assert "installing uv (about 40 s, as the last build here)" in "\n".join(said)
    # the new durations replace the old
    assert json.loads(record.read_text())["installing uv"] == steps.took["installing uv"] < 1


def test_a_failed_step_records_nothing(tmp_path: Path) -> None:
    record = tmp_path / "steps.json"
    steps = Steps("image", lambda line: None, record, tick=0.05)
    try:
        with steps.step("debootstrap bookworm"):
            raise RuntimeError("archive unreachable")
    except RuntimeError:
        pass
    assert steps.took == {} and not record.exists()
