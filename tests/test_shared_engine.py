"""Two users of one Docker engine, each with their own data directory: the leases live on
the engine, so one user's ``envs prune``, ``gc`` and ``inspect`` spare the other's live run;
a lease whose holder is gone or stopped beating expires."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.container


def _swe_green(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()", *args],
        capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _wait_for(check, seconds: float, what: str, proc: subprocess.Popen):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.stdout.read()}")
        time.sleep(1)
    raise AssertionError(f"no {what} within {seconds} s")


def test_engine_leases_beat_and_expire(docker_backend):
    from orchestrator.housekeeping.engine_leases import (
        LABEL_HOST,
        LABEL_LEASE,
        LABEL_PID,
        VOLUME_PREFIX,
        engine_leases,
        hold_engine_lease,
        live_everywhere,
    )
    from orchestrator.sandbox.models import LABEL_RUN

    from .conftest import TEST_RUN_ID

    run_id = f"{TEST_RUN_ID}-lease"

    def mine() -> dict[str, object]:
        return {lease.run_id: lease for lease in engine_leases(docker_backend)
                if lease.run_id.startswith(run_id)}  # fmt: skip

    client = docker_backend.client
    with hold_engine_lease(docker_backend, run_id, instances=["demo__x-1"], containers=["box"],
                           beat=0.5):  # fmt: skip
        first = mine()[run_id]
        assert first.live and first.instances == {"demo__x-1"} and first.containers == {"box"}
        time.sleep(2.5)
        assert mine()[run_id].heartbeat > first.heartbeat  # a new volume every beat
        volumes = client.volumes.list(filters={"label": f"{LABEL_RUN}={run_id}"})
        assert len(volumes) == 1  # the one before goes
        live = live_everywhere(docker_backend, None)
        assert run_id in live.runs and live.holds("another", "box")
        # an hour from now, without a heartbeat, it has expired
        later = {x.run_id: x for x in engine_leases(docker_backend, now=time.time() + 3600)}
        assert not later[run_id].live and "heartbeat" in later[run_id].why
    assert run_id not in mine()  # its volumes go with it

    # a holder on this host whose process is gone (kill -9): expired at once
    dead = subprocess.Popen(["sleep", "60"])
    dead.kill()
    dead.wait()
    crashed = client.volumes.create(
        name=f"{VOLUME_PREFIX}{run_id}-crashed", labels={
            LABEL_LEASE: f"{run_id}-crashed", LABEL_RUN: f"{run_id}-crashed",
            LABEL_PID: str(dead.pid), LABEL_HOST: socket.gethostname(),
        },
    )  # fmt: skip
    try:
        lease = mine()[f"{run_id}-crashed"]
        assert not lease.live and "gone" in lease.why
        assert f"{run_id}-crashed" in live_everywhere(docker_backend, None).expired_runs
    finally:
        crashed.remove(force=True)


def test_held_leases_beat_file_and_engine_from_one_thread(docker_backend, tmp_path):
    import threading

    from orchestrator.housekeeping.engine_leases import engine_leases, hold_leases
    from orchestrator.leases import note_image, read_leases

    from .conftest import TEST_RUN_ID

    run_id = f"{TEST_RUN_ID}-both"

    def on_engine():  # noqa: ANN202
        return next(x for x in engine_leases(docker_backend) if x.run_id == run_id)

    def heartbeats() -> list[str]:
        return sorted(t.name for t in threading.enumerate() if t.name.startswith("heartbeat-"))

    before = heartbeats()
    with hold_leases(docker_backend, tmp_path, run_id, beat=0.5) as path:
        assert heartbeats() == sorted([*before, f"heartbeat-leases-{run_id}"])  # one, for both
        file_beat, engine_beat = path.stat().st_mtime, on_engine().heartbeat
        time.sleep(2.5)
        assert path.stat().st_mtime > file_beat and on_engine().heartbeat > engine_beat
        note_image(run_id, "swe-green/env:both")  # both beat at once
        deadline = time.monotonic() + 5
        while not (on_engine().images and read_leases(tmp_path)[0].images):
            assert time.monotonic() < deadline, "no beat on a new image"
            time.sleep(0.05)
        assert on_engine().images == {"swe-green/env:both"}
    assert heartbeats() == before and not path.exists()
    assert all(x.run_id != run_id for x in engine_leases(docker_backend))


def test_another_data_dirs_prune_gc_and_inspect_spare_a_live_run(
    env_settings, synthetic_instances, tmp_path, docker_backend, docker_client, make_sandbox
):
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.environments.build import prepare_instance
    from orchestrator.frontends.reference_participants import running
    from orchestrator.frontends.reference_participants.scripted import (
        FinalAnswer,
        Script,
        ScriptedParticipant,
    )
    from orchestrator.housekeeping.inventory import list_containers
    from orchestrator.sandbox.models import LABEL_INSTANCE, LABEL_KIND, LABEL_TOOL

    from .conftest import TEST_RUN_ID, cli_env

    prefix = env_settings.environment.image_prefix
    data_a, data_b = env_settings.storage.data_dir, tmp_path / "data-b"
    assert data_a != data_b  # two users: nothing of A's data dir is visible to B
    env_a = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"}
    env_b = {**env_a, "SWE_GREEN_DATA_DIR": str(data_b)}
    ids = ["demo__units-1", "demo__calc-1"]
    # user A's images for both instances, built before the run (the second waits its turn)
    ctx = RunContext(env_settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / "build"))
    built = {iid: prepare_instance(ctx, synthetic_instances[iid]) for iid in ids}
    images = {iid: docker_client.images.get(p.instance_image).id for iid, p in built.items()}
    envs = {docker_client.images.get(p.env_image).id for p in built.values()}
    # an instance image nobody uses: what B's prune may take
    decoy_box = make_sandbox(run_id=f"{TEST_RUN_ID}-decoy", instance_id="demo__decoy-1")
    decoy_tag = f"{prefix}/instance:demo__decoy-1-0000"
    decoy_box.container.commit(
        repository=f"{prefix}/instance", tag="demo__decoy-1-0000",
        conf={"Labels": {LABEL_TOOL: "1", LABEL_KIND: "instance",
                         LABEL_INSTANCE: "demo__decoy-1"}},
    )  # fmt: skip
    decoy_box.remove()

    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=40)))
    run_a = tmp_path / "runs" / "a"
    with running(slow) as url:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()", "run",
             "--participant", url, *[a for i in ids for a in ("--id", i)], "--concurrency", "1",
             "--output", str(run_a)],
            env=env_a, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            run_id = _wait_for(
                lambda: (run_a / "config.json").is_file()
                and json.loads((run_a / "config.json").read_text())["run_id"],
                300, "run A's config", proc,
            )  # fmt: skip
            busy = _wait_for(
                lambda: [c for c in list_containers(docker_backend, run_id=run_id)
                         if c.role == "participant" and c.status == "running"],
                600, "run A's participant container", proc,
            )[0]  # fmt: skip
            # B prunes every cached image it may: none of A's, the decoy goes
            pruned = _swe_green(["envs", "prune"], env_b)
            assert pruned.returncode == 0, pruned.stdout + pruned.stderr
            assert decoy_tag in pruned.stdout, pruned.stdout
            left = {image.id for image in docker_client.images.list()}
            assert set(images.values()) <= left and envs <= left, pruned.stdout
            pending = next(i for i in ids if i != busy.instance_id)
            # the instance still to come is spared by A's lease alone: no container uses it
            assert f"{built[pending].instance_image}: an instance of run {run_id} in progress" in (
                pruned.stdout
            )
            # B's gc spares A's container; B's inspect refuses it
            collected = _swe_green(["gc"], env_b)
            assert collected.returncode == 0, collected.stderr
            assert busy.name in collected.stdout.partition("in use, left alone")[2]
            assert f"held by the live lease of run {run_id}" in collected.stdout
            refused = _swe_green(["inspect", busy.name], env_b)
            assert refused.returncode == 2 and "in progress" in refused.stderr, refused.stderr
            # --force alone does not open another user's live container (a user whose runs
            # directory does not hold A's run): its run is named...
            other = {**env_b, "SWE_GREEN_RUNS_DIR": str(tmp_path / "runs-b")}
            forced = _swe_green(["inspect", busy.name, "--force"], other)
            assert forced.returncode == 2, forced.stderr
            assert "another user's run in progress" in forced.stderr, forced.stderr
            assert f"--run {run_id} --force" in forced.stderr
            # ... and the opening confirmed at a terminal (none here: refused, nothing opened)
            named = _swe_green(["inspect", busy.name, "--force", "--run", run_id], other)
            assert named.returncode == 2, named.stderr
            assert f"belongs to run {run_id}, another user's (held by process" in named.stderr
            assert "needs a confirmation, and no terminal is attached" in named.stderr
            out, _ = proc.communicate(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, out
    results = {p.parent.name: json.loads(p.read_text()) for p in run_a.glob("*/*/result.json")}
    assert set(results) == set(ids) and all(r["status"] != "error" for r in results.values())
    # the instance that waited found its images where A left them: nothing was rebuilt
    assert docker_client.images.get(built[pending].instance_image).id == images[pending]


def test_an_engine_lock_serialises_builds_and_a_stale_one_is_taken_over(
    docker_backend, docker_client, base_image
):
    import threading

    from orchestrator.housekeeping.engine_locks import LABEL_LOCK_HOLDER, engine_lock, lock_name

    from .conftest import TEST_RUN_ID

    key = f"env-{TEST_RUN_ID}-lock"
    events: list[str] = []
    inside = threading.Event()

    def second() -> None:
        inside.wait(30)
        with engine_lock(docker_backend, key, base_image, poll=0.2):
            events.append("second in")

    other = threading.Thread(target=second)
    other.start()
    with engine_lock(docker_backend, key, base_image):
        inside.set()
        time.sleep(2)  # the other waits meanwhile
        events.append("first out")
        assert docker_client.containers.get(lock_name(key)).status == "created"
    other.join(60)
    assert events == ["first out", "second in"]
    assert not docker_client.containers.list(all=True, filters={"name": lock_name(key)})

    # a lock whose holder holds no live lease (it crashed): taken over at once
    docker_client.containers.create(
        base_image, command=["true"], name=lock_name(key),
        labels={LABEL_LOCK_HOLDER: "lock-crashed-holder"},
    )  # fmt: skip
    started = time.monotonic()
    with engine_lock(docker_backend, key, base_image, poll=0.2):
        assert time.monotonic() - started < 10
    assert not docker_client.containers.list(all=True, filters={"name": lock_name(key)})


def test_gc_never_collects_a_build_lock_whose_holder_lives(
    docker_backend, docker_client, base_image
):
    from orchestrator.housekeeping.engine_locks import LABEL_LOCK_HOLDER, engine_lock, lock_name
    from orchestrator.housekeeping.gc import gc
    from orchestrator.housekeeping.inventory import list_containers

    from .conftest import TEST_RUN_ID

    key = f"env-{TEST_RUN_ID}-gc-lock"
    name = lock_name(key)
    # the base image carries the tool's label, which a container inherits
    assert docker_client.images.get(base_image).labels.get("swe-green") == "1"
    with engine_lock(docker_backend, key, base_image):
        assert docker_client.containers.get(name).status == "created"
        # not one of the tool's containers (sandbox ls, the clean-ups of runs)
        assert name not in {c.name for c in list_containers(docker_backend)}
        plan = gc(docker_backend, dry_run=True)  # dry: other users share this engine
        assert name not in plan.containers
        assert f"{name}: the build lock of {key}, its holder is building" in plan.spared
    assert not docker_client.containers.list(all=True, filters={"name": name})

    # a lock whose holder crashed (labelled as an older version did, the tool's label
    # inherited): collectable
    docker_client.containers.create(
        base_image, command=["true"], name=name,
        labels={"swe-green.lock": key, LABEL_LOCK_HOLDER: "lock-crashed-holder"},
    )  # fmt: skip
    try:
        plan = gc(docker_backend, dry_run=True)
        assert plan.containers.count(name) == 1 and not [s for s in plan.spared if name in s]
    finally:
        docker_client.containers.get(name).remove(force=True)


def test_inspect_opens_the_callers_own_container_and_uses_the_runs_recorded_dataset(
    env_settings, tmp_path, docker_backend, make_sandbox
):
    """User B's run kept a container of demo__units-1 (its directory given by --output);
    another run has a newer one of the same instance. B's ``inspect demo__units-1`` opens
    B's own; user A (another data dir) is not given B's; ``inspect --run <B's run id>``
    finds the directory by the id, works with the run's recorded dataset whatever today's
    says, and runs the run's own eval script."""
    from orchestrator.housekeeping.gc import gc
    from orchestrator.housekeeping.inventory import list_containers

    from .conftest import TEST_RUN_ID, cli_env, run_cli

    env_b = {**cli_env(env_settings, tmp_path / "runs-b"), "COLUMNS": "250",
             "SWE_GREEN_DATA_DIR": str(tmp_path / "data-b")}  # fmt: skip
    env_a = {**env_b, "SWE_GREEN_DATA_DIR": str(tmp_path / "data-a"),
             "SWE_GREEN_RUNS_DIR": str(tmp_path / "runs-a")}  # fmt: skip
    run_dir = tmp_path / "elsewhere" / "scribble"  # not under runs_dir
    script = tmp_path / "scribble.json"  # a change that resolves nothing: its container is kept
    script.write_text(json.dumps({
        "turns": [{"calls": [{"name": "bash", "arguments": {
            "command": "cd /testbed && echo scribble >> README.md"}}]}],
    }))  # fmt: skip
    proc = run_cli(["run", "--participant", "scripted", "--script", str(script), "--id",
                    "demo__units-1", "--output", str(run_dir)], env_b)  # fmt: skip
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    try:
        kept = list_containers(docker_backend, run_id=run_id)
        assert len(kept) == 1 and kept[0].status == "exited", kept
        # another run's container of the same instance, newer, stopped
        other = make_sandbox(run_id=f"{TEST_RUN_ID}-other-user", instance_id="demo__units-1")
        other.container.stop(timeout=1)

        def inspect(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()",
                 "inspect", *args],
                input="grep -c scribble README.md; exit\n", capture_output=True, text=True,
                timeout=300, env=env,
            )  # fmt: skip

        mine = inspect(["demo__units-1"], env_b)
        assert mine.returncode == 0, mine.stderr
        assert f"Found {kept[0].name}" in mine.stderr and mine.stdout.strip() == "1"
        # the run's directory found by its id: its own eval script
        assert f"the run's own eval script ({run_dir}/instances/demo__units-1/eval.sh)" in (
            mine.stderr
        )
        # user A: neither container is of A's runs; named, it opens
        refused = inspect(["demo__units-1"], env_a)
        assert refused.returncode == 2, refused.stderr
        assert "No container of your runs is labelled with instance demo__units-1" in (
            refused.stderr
        )
        # other users' containers are counted, never named
        assert "2 container(s) of other users' runs are" in refused.stderr, refused.stderr
        assert kept[0].name not in refused.stderr and other.container.name not in refused.stderr
        assert "Fix: to open one of another user's containers, name its run: --run RUN" in (
            " ".join(refused.stderr.split())
        )
        # --run <run id> with today's dataset another one: the run's recorded dataset counts
        moved = {**env_b, "SWE_GREEN_DATASET": str(tmp_path / "no-such-dataset.jsonl")}
        by_id = inspect(["demo__units-1", "--run", run_id], moved)
        assert by_id.returncode == 0, by_id.stderr
        assert by_id.stdout.strip() == "1" and "No re-run commands" not in by_id.stderr
        assert "the run's own eval script" in by_id.stderr
        assert "Re-run the FAIL_TO_PASS tests" in by_id.stderr
    finally:
        gc(docker_backend, run_id=run_id)
