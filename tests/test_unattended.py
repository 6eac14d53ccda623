"""Unattended operation on a shared host: leases, honest exit codes, checks before a run
starts, resume of the same run."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import structlog

from orchestrator.leases import (
    Heartbeat,
    hold_lease,
    lease_path,
    live_set_of,
    note_image,
    read_leases,
)
from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.run.outcome import run_exit_code

from .cli_in_process import swe_green

# --------------------------------------------------------------------------- leases


def test_a_lease_is_live_while_held_and_expires_when_its_holder_is_gone(tmp_path):
    with hold_lease(tmp_path, "run-a", instances=["x"], containers=["box"], beat=0.05) as path:
        before = path.stat().st_mtime
        time.sleep(0.3)
        assert path.stat().st_mtime > before  # the heartbeat renews it
        live = live_set_of(read_leases(tmp_path))
        assert "run-a" in live.runs and live.holds("other", "box") and live.holds("run-a", "y")
    assert not path.exists() and live_set_of(read_leases(tmp_path)).runs == frozenset()

    # a crashed holder (kill -9): its process is gone, so its lease has expired
    dead = subprocess.Popen(["sleep", "60"])
    dead.kill()
    dead.wait()
    crashed = lease_path(tmp_path, "run-crashed")
    crashed.parent.mkdir(parents=True, exist_ok=True)
    crashed.write_text(
        json.dumps({"run_id": "run-crashed", "pid": dead.pid, "host": socket.gethostname()})
    )
    # another host's holder that stopped beating
    silent = lease_path(tmp_path, "run-silent")
    silent.write_text(json.dumps({"run_id": "run-silent", "pid": 1, "host": "elsewhere"}))
    old = time.time() - 3600
    os.utime(silent, (old, old))
    # another host's holder that beats
    lease_path(tmp_path, "run-remote").write_text(
        json.dumps({"run_id": "run-remote", "pid": 1, "host": "elsewhere"})
    )
    leases = {lease.run_id: lease for lease in read_leases(tmp_path)}
    assert not leases["run-crashed"].live and "gone" in leases["run-crashed"].why
    assert not leases["run-silent"].live and "heartbeat" in leases["run-silent"].why
    assert leases["run-remote"].live
    live = live_set_of(read_leases(tmp_path))
    assert live.runs == {"run-remote"}
    assert live.expired_runs == {"run-crashed", "run-silent"}


def _heartbeat_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("heartbeat-"))


def test_one_heartbeat_thread_beats_every_beat_and_a_failing_beat_stops_none():
    calls = {"failing": 0, "counting": 0}

    def failing() -> None:
        calls["failing"] += 1
        raise OSError("disk full")

    def counting() -> None:
        calls["counting"] += 1

    before = _heartbeat_threads()
    with structlog.testing.capture_logs() as logs, Heartbeat("both", every=0.02) as heartbeat:
        with heartbeat.beating(failing), heartbeat.beating(counting):
            assert _heartbeat_threads() == sorted([*before, "heartbeat-both"])  # one for both
            deadline = time.monotonic() + 5
            while calls["counting"] < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
        stopped = dict(calls)
        time.sleep(0.1)
        assert calls == stopped  # a beat whose block ended is not called again
    assert calls["failing"] >= 3 and calls["counting"] >= 3  # the failure did not stop the others
    assert any(log["event"] == "lease.beat_failed" and "disk full" in log["error"] for log in logs)
    assert _heartbeat_threads() == before  # the thread stops with the block


def test_held_leases_share_one_heartbeat_and_a_new_image_beats_at_once(tmp_path):
    before = _heartbeat_threads()
    with Heartbeat("shared", every=3600) as heartbeat:
        with (
            hold_lease(tmp_path, "run-a", heartbeat=heartbeat) as a,
            hold_lease(tmp_path, "run-b", heartbeat=heartbeat) as b,
        ):
            assert _heartbeat_threads() == sorted([*before, "heartbeat-shared"])
            note_image("run-b", "swe-green/env:x")  # beats now, not in an hour
            deadline = time.monotonic() + 5
            while "images" not in b.read_text() or not json.loads(b.read_text())["images"]:
                assert time.monotonic() < deadline, "no beat on a new image"
                time.sleep(0.01)
            assert json.loads(b.read_text())["images"] == ["swe-green/env:x"]
            assert json.loads(a.read_text())["images"] == []
        assert not a.exists() and not b.exists()


def test_held_leases_run_one_heartbeat_thread(tmp_path):
    from orchestrator.housekeeping.engine_leases import hold_leases
    from orchestrator.sandbox.local import LocalBackend

    before = _heartbeat_threads()
    with hold_leases(LocalBackend(), tmp_path, "run-a", beat=0.05) as path:
        assert _heartbeat_threads() == sorted([*before, "heartbeat-leases-run-a"])
        first = path.stat().st_mtime_ns
        deadline = time.monotonic() + 5
        while path.stat().st_mtime_ns == first:
            assert time.monotonic() < deadline, "the lease file was not renewed"
            time.sleep(0.02)
    assert not path.exists() and _heartbeat_threads() == before


# --------------------------------------------------------------------------- exit codes


def _result(status: Status, reason: Reason = Reason.NONE) -> InstanceResult:
    return InstanceResult(instance_id="a__b-1", status=status, reason=reason)


def test_a_run_that_graded_nothing_exits_3():
    unreachable = _result(Status.ERROR, Reason.PARTICIPANT_UNREACHABLE)
    protocol = _result(Status.ERROR, Reason.PARTICIPANT_PROTOCOL)
    assert run_exit_code([unreachable, protocol]) == 3
    assert run_exit_code([_result(Status.ERROR, Reason.ENVIRONMENT)]) == 3
    # one graded instance is a graded run, whatever its outcome
    assert run_exit_code([unreachable, _result(Status.NO_OP, Reason.EMPTY_PATCH)]) == 0
    assert run_exit_code([unreachable, _result(Status.ERROR, Reason.TEST_TIMEOUT)]) == 0
    assert run_exit_code([_result(Status.RESOLVED)]) == 0
    assert run_exit_code([]) == 0


# --------------------------------------------------------------------------- fail fast


@pytest.fixture
def card_server():
    """A participant on 127.0.0.1 whose agent card answers ``status`` (settable), and whose
    A2A endpoint answers 500."""
    state = {"status": 500}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"name": "broken", "url": "", "version": "1"}).encode()
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", state
    server.shutdown()


def test_bad_input_is_one_line_exit_2_and_leaves_no_run_directory(
    synthetic_dir, tmp_path, card_server
):
    url, _ = card_server
    runs = tmp_path / "runs"
    base = {
        "SWE_GREEN_DATA_DIR": str(tmp_path / "data"), "SWE_GREEN_RUNS_DIR": str(runs),
        "SWE_GREEN_DATASET": str(synthetic_dir / "instances.jsonl"),
    }  # fmt: skip
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    nested = tmp_path / "dataset-dir"
    (nested / ".venv" / "lib").mkdir(parents=True)
    (nested / ".venv" / "lib" / "junk.json").write_text('{"not": "an instance"}')
    (nested / "test.jsonl").write_text((synthetic_dir / "instances.jsonl").read_text())
    cases = [
        (["--count", "0"], {}, "--count"),
        (["--count", "-3"], {}, "--count"),
        (["--shard", "abc"], {}, "--shard"),
        (["--shard", "4/3"], {}, "--shard"),
        (["--shard", "0/2"], {}, "--shard"),
        (["--concurrency", "-2"], {}, "--concurrency"),
        ([], {"SWE_GREEN_MEMORY": "lots"}, "SWE_GREEN_MEMORY"),
        ([], {"SWE_GREEN_TEST_TIMEOUT": "-5"}, "SWE_GREEN_TEST_TIMEOUT"),
        ([], {"SWE_GREEN_INSTANCE_TIMEOUT": "0"}, "SWE_GREEN_INSTANCE_TIMEOUT"),
        ([], {"SWE_GREEN_CPUS": "-1"}, "SWE_GREEN_CPUS"),
        ([], {"SWE_GREEN_CONCURRENCY": "0"}, "SWE_GREEN_CONCURRENCY"),
        ([], {"SWE_GREEN_DATASET": str(empty)}, "is empty"),
        # root ignores file modes: a path under a file is unwritable for everyone
        ([], {"SWE_GREEN_RUNS_DIR": str(empty / "runs")}, "SWE_GREEN_RUNS_DIR"),
        ([], {"SWE_GREEN_DATA_DIR": str(empty / "data")}, "SWE_GREEN_DATA_DIR"),
        (["--participant", "scripted"], {}, "--script FILE"),
        (["--participant", "claude"], {"ANTHROPIC_API_KEY": ""}, "ANTHROPIC_API_KEY"),
        (["--participant", "nobody"], {}, "gold, empty, scripted"),
        (["--participant", url], {}, "HTTP 500"),
    ]
    for args, env, words in cases:
        if "--participant" not in args:
            args = ["--participant", "gold", *args]
        done = swe_green("run", *args, env={**base, **env})
        said = done.stdout + done.stderr
        assert done.returncode == 2, (args, env, said)
        assert "Traceback" not in said and "never awaited" not in said, said
        assert words in said.replace("\n", " "), (args, env, said)
        assert not runs.exists() or not list(runs.iterdir()), (args, env, list(runs.iterdir()))
    # a directory dataset is its own files, not a tree (a venv inside is not read)
    listed = swe_green("instances", "ls", env={**base, "SWE_GREEN_DATASET": str(nested)})
    assert listed.returncode == 0, listed.stderr
    assert "3 instance(s)" in listed.stdout
    # --count -1 is all of them
    every = swe_green("instances", "ls", "--count", "-1", env=base)
    assert every.returncode == 0 and "3 instance(s)" in every.stdout, every.stderr


def test_resume_refuses_a_setting_that_differs_from_the_recorded_one(synthetic_dir, tmp_path):
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    recorded = str(synthetic_dir / "instances.jsonl")
    config = {
        "run_id": "run-20260101-000000-abcdef12", "source": "cli", "participant": "gold",
        "selection": {"ids": ["demo__units-1"]}, "settings_overrides": {},
        "settings": {"dataset": recorded, "mirror_dir": str(synthetic_dir / "mirrors"),
                     "test_timeout": 1800.0},
    }  # fmt: skip
    (run_dir / "config.json").write_text(json.dumps(config))
    other = tmp_path / "other.jsonl"
    other.write_text((synthetic_dir / "instances.jsonl").read_text())
    env = {"SWE_GREEN_DATA_DIR": str(tmp_path / "data"), "SWE_GREEN_DATASET": str(other)}
    done = swe_green("run", "--resume", str(run_dir), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr.replace("\n", " ")
    assert "dataset" in said and str(other) in said and recorded in said, said
    timeout = swe_green(
        "run", "--resume", str(run_dir), "--test-timeout", "60",
        env={"SWE_GREEN_DATA_DIR": str(tmp_path / "data")},
    )  # fmt: skip
    assert timeout.returncode == 2 and "test_timeout" in timeout.stderr, timeout.stderr
    assert "1800" in timeout.stderr and "60" in timeout.stderr
    participant = swe_green(
        "run", "--resume", str(run_dir), "--participant", "empty",
        env={"SWE_GREEN_DATA_DIR": str(tmp_path / "data")},
    )  # fmt: skip
    assert participant.returncode == 2 and "'gold'" in participant.stderr, participant.stderr


# --------------------------------------------------------------------------- two runs at once


def _wait_for(predicate, timeout: float, what: str, proc=None):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"{what}: the run ended first: {out}")
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.container
def test_two_runs_at_once_gc_inspect_and_kept_containers(
    env_settings, tmp_path, docker_backend, make_sandbox
):
    """Run A (a slow participant) and run B (a scripted one that scribbles, two instances,
    at most one kept container) on one engine; gc, inspect and a crashed run's leftovers
    while both are in progress."""
    from orchestrator.frontends.reference_participants import running
    from orchestrator.frontends.reference_participants.scripted import (
        FinalAnswer,
        Script,
        ScriptedParticipant,
    )
    from orchestrator.housekeeping.gc import gc
    from orchestrator.housekeeping.inventory import list_containers

    from .conftest import TEST_RUN_ID, cli_env, run_cli

    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"}
    data_dir = env_settings.storage.data_dir
    script = tmp_path / "scribble.json"
    script.write_text(json.dumps({
        "turns": [{"calls": [{"name": "bash", "arguments": {
            "command": "cd /testbed && echo scribble >> README.md"}}]}],
        "final": {"text": "done"},
    }))  # fmt: skip
    run_a, run_b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=45)))
    # a crashed run: a running container and a lease whose process is gone
    crashed_id = f"{TEST_RUN_ID}-crashed"
    leftover = make_sandbox(run_id=crashed_id, instance_id="demo__units-1")
    dead = subprocess.Popen(["sleep", "60"])
    dead.kill()
    dead.wait()
    lease = lease_path(data_dir, crashed_id)
    lease.parent.mkdir(parents=True, exist_ok=True)
    lease.write_text(
        json.dumps({"run_id": crashed_id, "pid": dead.pid, "host": socket.gethostname()})
    )
    # a run whose lease lives in another data_dir: one container running, one kept (stopped)
    foreign_id = f"{TEST_RUN_ID}-foreign"
    foreign_busy = make_sandbox(run_id=foreign_id, instance_id="demo__calc-1")
    foreign_kept = make_sandbox(run_id=foreign_id, instance_id="demo__textkit-1")
    foreign_kept.container.stop(timeout=1)
    ids_a = ids_b = ""
    with running(slow) as url:
        proc_a = run_cli(["run", "--participant", url, "--id", "demo__units-1", "--output",
                          str(run_a)], env)  # fmt: skip
        try:
            ids_a = _wait_for(
                lambda: (run_a / "config.json").is_file()
                and json.loads((run_a / "config.json").read_text())["run_id"],
                300, "run A's config", proc_a,
            )  # fmt: skip
            participant_a = _wait_for(
                lambda: [c for c in list_containers(docker_backend, run_id=ids_a)
                         if c.role == "participant" and c.status == "running"],
                600, "run A's participant container", proc_a,
            )[0]  # fmt: skip
            proc_b = run_cli(
                ["run", "--participant", "scripted", "--script", str(script), "--id",
                 "demo__units-1", "--id", "demo__textkit-1", "--output", str(run_b),
                 "--concurrency", "1"],
                {**env, "SWE_GREEN_MAX_KEPT_PER_RUN": "1"},
            )  # fmt: skip
            # gc while A runs: a dry run shows A's container apart, and removes nothing
            dry = swe_green("gc", "--dry-run", env=env)
            assert dry.returncode == 0, dry.stderr
            would, _, spared = dry.stdout.partition("in use, left alone")
            assert participant_a.name not in would and participant_a.name in spared, dry.stdout
            assert f"held by the live lease of run {ids_a}" in spared
            # the crashed run's lease has expired: run A's start reaped its container and lease
            assert leftover.name not in would
            assert not list_containers(docker_backend, run_id=crashed_id)
            assert not lease.exists()
            assert foreign_kept.name in spared and foreign_busy.name in spared
            assert f"run {foreign_id} has a running container" in spared
            named = swe_green("gc", "--run", ids_a, env=env)
            assert named.returncode == 0 and "removed 0 container(s)" in named.stdout, named.stdout
            assert participant_a.name in named.stdout  # under "in use"
            # inspect refuses a running container of a live run, unless --force
            refused = swe_green("inspect", "demo__units-1", "--run", ids_a, env=env)
            assert refused.returncode == 2 and "in progress" in refused.stderr, refused.stderr
            forced = subprocess.run(
                [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()",
                 "inspect", "demo__units-1", "--run", ids_a, "--force"],
                input="echo in-$(basename $PWD); exit\n", capture_output=True, text=True,
                timeout=120, env=env,
            )  # fmt: skip
            assert "in-testbed" in forced.stdout, forced.stderr
            out_a, _ = proc_a.communicate(timeout=600)
            out_b, _ = proc_b.communicate(timeout=900)
            ids_b = json.loads((run_b / "config.json").read_text())["run_id"]
        finally:
            for proc in (proc_a, locals().get("proc_b")):
                if proc is not None and proc.poll() is None:
                    proc.kill()
    try:
        assert proc_a.returncode == 0, out_a
        # run A's result is intact, and its empty answer kept no container
        result_a = json.loads((run_a / "instances" / "demo__units-1" / "result.json").read_text())
        assert result_a["reason"] == "empty_patch"
        assert list_containers(docker_backend, run_id=ids_a) == []
        assert proc_b.returncode == 0, out_b
        results_b = [json.loads(p.read_text()) for p in run_b.glob("instances/*/result.json")]
        assert len(results_b) == 2 and all(r["status"] != "resolved" for r in results_b)
        kept = list_containers(docker_backend, run_id=ids_b)
        assert len(kept) == 1 and kept[0].status == "exited", kept  # the per-run cap
        # inspect --run B opens the kept container and stops it again when the shell exits
        shell = subprocess.run(
            [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()",
             "inspect", kept[0].instance_id, "--run", ids_b],
            input="grep -c scribble README.md; exit\n", capture_output=True, text=True,
            timeout=120, env=env,
        )  # fmt: skip
        assert shell.stdout.strip() == "1", shell.stdout + shell.stderr
        assert "Stopped" in shell.stderr
        assert list_containers(docker_backend, run_id=ids_b)[0].status == "exited"
        # gc --older-than spares what is younger
        young = swe_green("gc", "--run", ids_b, "--older-than", "1h", env=env)
        assert "removed 0 container(s)" in young.stdout, young.stdout
        old = swe_green("gc", "--run", ids_b, "--older-than", "0s", env=env)
        assert "removed 1 container(s)" in old.stdout, old.stdout
    finally:
        for run_id in (ids_a, ids_b, crashed_id, foreign_id):
            if run_id:
                gc(docker_backend, run_id=run_id)


# --------------------------------------------------------------------------- README


def test_the_readme_is_the_short_page_with_the_commands_and_the_statuses():
    """Two commands on the first screen, every status in the table, every link a page of the
    site; the rest (every setting, every exit status) is the site's generated reference."""
    from orchestrator.models import Status

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    first_screen = "\n".join(readme.splitlines()[:25])
    assert "scripts/setup && .venv/bin/swe-green demo" in first_screen
    assert "scripts/test" in first_screen
    statuses = readme[readme.index("## Statuses") :]
    for status in Status:
        assert f"| {status.value} |" in statuses, status
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 10
    for link in links:
        assert (root / link).exists(), link
    assert "<!-- generated: settings -->" in (root / "docs/reference/settings.md").read_text()
    assert "<!-- generated: exit-codes -->" in (root / "docs/reference/statuses.md").read_text()


@pytest.mark.container
def test_a_run_that_reached_no_participant_exits_3(env_settings, tmp_path, card_server):
    """The card answers (the start check passes) but every message fails: the run ends, its
    results are kept, and its exit status says that nothing was graded."""
    from .conftest import cli_env, run_cli

    url, state = card_server
    state["status"] = 200
    run_dir = tmp_path / "runs" / "unreachable"
    # the run's id is its own, not the session's: a container it kept would outlive the tests
    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250",
           "SWE_GREEN_KEEP_CONTAINERS": "never"}  # fmt: skip
    proc = run_cli(
        ["run", "--participant", url, "--id", "demo__units-1", "--output", str(run_dir)], env
    )
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 3, out
    assert "graded nothing" in out
    result = json.loads((run_dir / "instances" / "demo__units-1" / "result.json").read_text())
    assert result["status"] == "error" and result["reason"].startswith("participant_"), result
    assert "Not resolved (1): why" in out


# --------------------------------------------------------------------------- kept containers


def test_kept_containers_are_capped_per_run_and_per_host(tmp_path):
    """Per run: past the cap none more is kept. Per host: the oldest kept containers of
    finished runs make room, never those a live lease holds."""
    from orchestrator.housekeeping.kept import room_to_keep
    from orchestrator.sandbox.local import LOCAL_IMAGE, LocalBackend
    from orchestrator.sandbox.models import SandboxSpec

    backend = LocalBackend()

    def kept(run_id: str, n: int) -> list[str]:
        names = []
        for i in range(n):
            box = backend.start(LOCAL_IMAGE, SandboxSpec(run_id=run_id, name=f"{run_id}-{i}"))
            box.stop()
            names.append(box.name)
        return names

    old = kept("finished-old", 2)
    newer = kept("finished-new", 1)
    mine = kept("live", 2)
    with hold_lease(tmp_path, "live"):
        assert room_to_keep(backend, tmp_path, "live", per_run=3, per_host=10)
        assert not room_to_keep(backend, tmp_path, "live", per_run=2, per_host=10)
        # the host is full (5 of 5): the oldest finished run's containers make room
        assert room_to_keep(backend, tmp_path, "live", per_run=10, per_host=5)
        left = {info.name for info in backend.containers()}
        assert left == {old[1], *newer, *mine}
        # only the live run's containers left and the cap reached: none more is kept
        assert not room_to_keep(backend, tmp_path, "live", per_run=10, per_host=2)
        assert {info.name for info in backend.containers()} == set(mine)


@pytest.mark.container
def test_inspect_prefers_the_stopped_participant_container_of_the_named_run(
    make_sandbox, docker_backend
):
    from orchestrator.housekeeping.inventory import find_container

    from .conftest import TEST_RUN_ID

    run_id = f"{TEST_RUN_ID}-inspect"
    kept = make_sandbox(run_id=run_id, instance_id="demo__pick-1", role="participant")
    kept.container.stop(timeout=1)
    make_sandbox(run_id=run_id, instance_id="demo__pick-1", role="grading")  # newer, running
    other = make_sandbox(run_id=f"{run_id}-other", instance_id="demo__pick-1", role="participant")
    other.container.stop(timeout=1)  # the newest stopped one, of another run
    info, how = find_container(docker_backend, "demo__pick-1", run_id=run_id)
    assert info.name == kept.name and f"of run {run_id}" in how
    info, _ = find_container(docker_backend, "demo__pick-1")
    assert info.name == other.name  # without --run: the newest stopped participant container


def test_the_ray_reaper_spares_what_another_runs_live_lease_holds(tmp_path):
    from orchestrator.housekeeping.reaper import remove_dead_node_containers
    from orchestrator.sandbox.local import LOCAL_IMAGE, LocalBackend
    from orchestrator.sandbox.models import SandboxSpec

    backend = LocalBackend()

    def start(run_id: str, node: str) -> str:
        spec = SandboxSpec(run_id=run_id, node=node, name=f"{run_id}-{node}")
        return backend.start(LOCAL_IMAGE, spec).name

    other_live = start("other-live", "dead-node")
    finished = start("finished", "dead-node")
    mine = start("mine", "dead-node")
    alive = start("mine", "alive-node")
    try:
        with hold_lease(tmp_path, "other-live"), hold_lease(tmp_path, "mine"):
            removed = remove_dead_node_containers(backend, {"alive-node"}, tmp_path, own_run="mine")
        assert sorted(removed) == sorted([finished, mine])
        assert {info.name for info in backend.containers()} == {other_live, alive}
    finally:
        for sandbox in backend.sandboxes.values():
            sandbox.remove()
