"""``serve`` under faults, with a real serve process on 127.0.0.1 and the real engine: killed
with SIGKILL, its assessment's containers and leases are reaped at the next start; stopped
with SIGTERM, it cancels its assessments and removes their containers before it ends; the
client (``assess``) exits 3 either way. The reaper spares a live holder's run, whoever's data
directory holds its lease file; two removals of one container both succeed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from orchestrator.dataset.instances import Selection
from orchestrator.frontends.cli.run_plan import RunPlan, resumed
from orchestrator.frontends.reference_participants import running
from orchestrator.frontends.reference_participants.scripted import (
    FinalAnswer,
    Script,
    ScriptedParticipant,
)
from orchestrator.housekeeping.engine_leases import LABEL_LEASE, hold_leases
from orchestrator.housekeeping.reaper import reap_dead_holders
from orchestrator.leases import LEASES_DIR
from orchestrator.sandbox.models import LABEL_RUN
from orchestrator.settings import Settings

from .conftest import TEST_RUN_ID, cli_env, run_cli

pytestmark = pytest.mark.container
SWE_GREEN = str(Path(sys.executable).parent / "swe-green")
INSTANCE = "demo__units-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(until: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@contextmanager
def serve(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen, str]]:
    """A real ``swe-green serve`` process; yields it and its URL once its card answers (it
    has reaped by then). Killed at the end if still running."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    process = run_cli(["serve", "--port", str(port)], env)

    def answers() -> bool:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        try:
            return httpx.get(url + ".well-known/agent-card.json", timeout=2).is_success
        except httpx.HTTPError:
            return False

    try:
        _wait(answers, 120, "serve to answer")
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def _assess(url: str, participant: str, env: dict[str, str]) -> subprocess.Popen:
    config = json.dumps({"instance_ids": [INSTANCE]})
    return subprocess.Popen(
        [SWE_GREEN, "assess", url, "--participant", participant, "--config", config],
        env={**env, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def _running(docker_client, run_id: str) -> list[str]:
    found = docker_client.containers.list(filters={"label": f"{LABEL_RUN}={run_id}"})
    return [c.name for c in found]


def _lease_volumes(docker_client, run_id: str) -> list[str]:
    found = docker_client.volumes.list(filters={"label": [LABEL_LEASE, f"{LABEL_RUN}={run_id}"]})
    return [v.name for v in found]


@pytest.fixture
def fault_env(env_settings: Settings, tmp_path: Path) -> dict[str, str]:
    env = cli_env(env_settings, tmp_path / "runs")
    env.update(
        SWE_GREEN_DATA_DIR=str(tmp_path / "data"),
        SWE_GREEN_VALIDATE_ENV="false",
        SWE_GREEN_SERVE_STOP_TIMEOUT="60",
    )
    return env


def _one_run(runs_dir: Path) -> str:
    (run_dir,) = list(runs_dir.iterdir())
    return run_dir.name


@pytest.mark.timeout(1200)
def test_a_killed_serve_leaves_nothing_running_after_its_next_start(
    fault_env: dict[str, str], docker_client, tmp_path: Path
) -> None:
    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=600)))
    with running(slow) as slow_url:
        with serve(fault_env) as (process, url):
            client = _assess(url, slow_url, fault_env)
            _wait(lambda: bool(slow.states), 900, "the participant's task")
            run_id = _one_run(tmp_path / "runs")
            assert _running(docker_client, run_id), "the instance's container runs"
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            output, _ = client.communicate(timeout=120)
        # the green agent died: the assessment failed, not through the request's fault
        assert client.returncode == 3, output
        assert "stopped answering" in output, output
        # what the dead serve held is still there...
        assert _running(docker_client, run_id)
        assert list((tmp_path / "data" / LEASES_DIR).glob("*.json"))
        assert _lease_volumes(docker_client, run_id)
        # ...until the next start, which reaps it
        with serve(fault_env):
            assert _running(docker_client, run_id) == []
            assert list((tmp_path / "data" / LEASES_DIR).glob("*.json")) == []
            assert _lease_volumes(docker_client, run_id) == []
    # the interrupted assessment is not a finished one: the report says what is missing, and a
    # resume keeps the selection and the participant it was started with
    run_dir = tmp_path / "runs" / run_id
    report = subprocess.run(
        [SWE_GREEN, "report", str(run_dir)], env={**fault_env, "COLUMNS": "200"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = report.stdout + report.stderr
    assert report.returncode == 3 and "Nothing finished in run" in said, report
    assert f"swe-green run --resume {run_dir}" in said, report
    given = RunPlan(participant=None, participant_id=None, concurrency=None,
                    selection=Selection(), overrides={})  # fmt: skip
    plan = resumed(given, run_dir)
    assert (plan.selection.ids, plan.participant) == ([INSTANCE], slow_url)


@pytest.mark.timeout(1200)
def test_sigterm_cancels_the_assessments_and_removes_their_containers(
    fault_env: dict[str, str], docker_client, tmp_path: Path
) -> None:
    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=600)))
    with running(slow) as slow_url, serve(fault_env) as (process, url):
        client = _assess(url, slow_url, fault_env)
        _wait(lambda: bool(slow.states), 900, "the participant's task")
        run_id = _one_run(tmp_path / "runs")
        assert _running(docker_client, run_id)
        started = time.monotonic()
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=90)
        stopped = time.monotonic() - started
        output, _ = client.communicate(timeout=60)
    assert stopped < 60, stopped
    assert client.returncode == 3, output
    assert "canceled" in output and "the green agent is stopping" in output, output
    assert _running(docker_client, run_id) == []
    assert docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"}) == []
    assert list((tmp_path / "data" / LEASES_DIR).glob("*.json")) == []
    assert _lease_volumes(docker_client, run_id) == []


def _dead_holder(data_dir: Path, run_id: str) -> None:
    """A process that holds a lease on ``run_id`` (a file in ``data_dir`` and one on the
    engine) and is then killed with SIGKILL."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from orchestrator.housekeeping.engine_leases import hold_leases\n"
        "from orchestrator.sandbox.docker import connect\n"
        "with hold_leases(connect(), Path(sys.argv[1]), sys.argv[2]):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(data_dir), run_id], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=30)


def test_the_reaper_takes_only_what_a_dead_holder_left(
    docker_backend, docker_client, make_sandbox, tmp_path: Path
) -> None:
    """Two users of the engine (data directories A and B). A dead holder's run (its lease
    file in B): the reaper run with A removes its running container and its engine lease
    (the engine lease says it is dead), not B's file (B's own start drops it). A live
    holder's run (B's lease, this process) and a run with no lease at all keep theirs."""
    dead, live, unleased = (f"{TEST_RUN_ID}-{n}" for n in ("dead", "live", "none"))
    mine, theirs = tmp_path / "a", tmp_path / "b"
    _dead_holder(theirs, dead)
    boxes = {run: make_sandbox(run_id=run) for run in (dead, live, unleased)}
    with hold_leases(docker_backend, theirs, live):
        reaped = reap_dead_holders(docker_backend, mine)  # (and any dead run of the engine)
        assert dead in reaped.runs and live not in reaped.runs and unleased not in reaped.runs
        assert boxes[dead].name in reaped.containers
        assert not boxes[dead].exists()
        assert boxes[live].is_running() and boxes[unleased].is_running()
        assert _lease_volumes(docker_client, dead) == []
        assert _lease_volumes(docker_client, live)
        assert len(list((theirs / LEASES_DIR).glob("*.json"))) == 2  # B's files are B's
        # B's own start drops its dead file, and spares its live one
        reap_dead_holders(docker_backend, theirs)
        (left,) = (theirs / LEASES_DIR).glob("*.json")
        assert json.loads(left.read_text())["run_id"] == live
    assert boxes[live].is_running()


def test_two_removals_of_one_container_both_succeed(docker_backend, make_sandbox) -> None:
    """A run's clean-up and a cancel remove the same containers at once: the one that finds
    the removal in progress (409) waits for it instead of failing."""
    errors: list[BaseException] = []

    def remove(ref: str) -> None:
        try:
            docker_backend.remove_container(ref)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    for _ in range(3):
        box = make_sandbox()
        threads = [threading.Thread(target=remove, args=(box.name,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert not box.exists()
