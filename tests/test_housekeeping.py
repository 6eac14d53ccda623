"""Housekeeping: container names, kept containers stopped, the image cache pruned."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import docker.errors
import pytest

from orchestrator.housekeeping.names import NAME_LIMIT, container_name

from .conftest import TEST_RUN_ID, remove_images_under

DOCKER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")


def test_container_names_say_what_they_hold_in_dockers_charset() -> None:
    assert container_name("run-20250101-010203-ab12", "django__django-11099", "participant") == (
        "swe-green-run-20250101-010203-ab12-django__django-11099-participant"
    )
    odd = container_name("run 1", "a/b:c@d", "setup")
    assert odd == "swe-green-run-1-a-b-c-d-setup" and DOCKER_NAME.fullmatch(odd)
    long = container_name("r", "x" * 300, "grading")
    assert len(long) <= NAME_LIMIT and DOCKER_NAME.fullmatch(long)
    assert container_name("r", "", "setup") == "swe-green-r-setup"


@pytest.mark.container
def test_run_containers_are_named_unique_and_kept_stopped(run_ctx, synthetic_instances):
    from orchestrator.housekeeping.inventory import list_containers
    from orchestrator.housekeeping.kept import keep_stopped
    from orchestrator.housekeeping.reaper import stop_run_containers

    instance = synthetic_instances["demo__units-1"]
    image = run_ctx.settings.environment.base_image()
    first = run_ctx.start_sandbox(image, instance, "participant", network=False)
    second = run_ctx.start_sandbox(image, instance, "participant", network=False)
    try:
        assert first.name == f"swe-green-{TEST_RUN_ID}-demo__units-1-participant"
        assert re.fullmatch(re.escape(first.name) + r"-[0-9a-f]{4}", second.name)
        assert keep_stopped(first) == first.name and not first.is_running()
        assert second.is_running()
        assert stop_run_containers(run_ctx.backend, TEST_RUN_ID) == [second.name]
        states = {c.name: c.status for c in list_containers(run_ctx.backend, run_id=TEST_RUN_ID)}
        assert states[first.name] == states[second.name] == "exited"
        # the image's use is recorded for `envs prune`
        from orchestrator.housekeeping.image_use import last_use

        assert last_use(run_ctx.settings.storage.data_dir, image) is not None
    finally:
        first.remove()
        second.remove()


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("unprivileged", [True, False])
@pytest.mark.parametrize("twins", [True, False])
def test_envs_prune_removes_every_validation_record_of_a_pruned_tag_and_no_other(
    tmp_path, runs: int, unprivileged: bool, twins: bool
) -> None:
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.housekeeping.prune import CachedImage, PrunePlan, execute_prune
    from orchestrator.sandbox.local import LocalBackend
    from orchestrator.settings import Settings
    from orchestrator.validation.validation import _cache_path

    data = tmp_path / "data"
    settings = Settings(
        data_dir=data, validation_runs=runs, unprivileged_tests=unprivileged, twin_check=twins
    )
    ctx = RunContext(settings, LocalBackend(), "run-1", RunDir(tmp_path / "run"))
    # what validation writes for the pruned tag, however its tests ran, and older records
    written = _cache_path(ctx, "p/instance:x-1")
    pruned = {written, *(data / "validation" / f"x-1{s}.json" for s in ("", "-uw3", "-r3-uw2-tw1"))}
    # records of other tags that merely start with the pruned one
    other = {data / "validation" / f"{t}.json" for t in ("x-10", "x-10-uw3", "x-1-abc", "x-1.5")}
    for path in pruned | other:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    image = CachedImage(
        id="local", tag="p/instance:x-1", kind="instance", size=0, last_used=0, parent="",
        labels={}, tags=("p/instance:x-1",),
    )  # fmt: skip
    assert execute_prune(LocalBackend(), data, PrunePlan([image], [], [])) == ["p/instance:x-1"]
    assert not any(path.exists() for path in pruned)
    assert all(path.exists() for path in other)


@pytest.mark.container
def test_a_failed_instance_leaves_a_named_stopped_container_that_inspect_starts(
    env_settings, tmp_path, docker_backend
):
    from orchestrator.housekeeping.gc import gc
    from orchestrator.housekeeping.inventory import list_containers

    from .conftest import cli_env, run_cli

    run_dir = tmp_path / "runs" / "scribble"
    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"}
    script = tmp_path / "scribble.json"  # a change that resolves nothing (not an empty patch)
    script.write_text(json.dumps({
        "turns": [{"calls": [{"name": "bash", "arguments": {
            "command": "cd /testbed && echo scribble >> README.md"}}]}],
    }))  # fmt: skip
    proc = run_cli(["run", "--participant", "scripted", "--script", str(script), "--id",
                    "demo__units-1", "--output", str(run_dir)], env)  # fmt: skip
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    try:
        kept = list_containers(docker_backend, run_id=run_id)
        # the run ends with no running container of its own; the participant's is kept
        assert [(c.name, c.status) for c in kept] == [
            (f"swe-green-{run_id}-demo__units-1-participant", "exited")
        ]
        instance_dir = run_dir / "instances" / "demo__units-1"
        result = json.loads((instance_dir / "result.json").read_text())
        assert result["status"] != "resolved" and result["container"] == kept[0].name
        assert result["logs"] and all(
            not path.startswith("/") and (instance_dir / path).is_file()
            for path in result["logs"].values()
        ), result["logs"]
        shell = subprocess.run(
            [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()",
             "inspect", kept[0].name],
            input="echo in-$(basename $PWD) py=$(command -v python); exit\n",
            capture_output=True, text=True,
            timeout=60, env=env,
        )  # fmt: skip
        assert "in-testbed py=/opt/swe/" in shell.stdout, shell.stderr  # the environment active
        assert "Re-run the FAIL_TO_PASS tests: bash /opt/swe/eval/fail_to_pass.sh" in shell.stderr
        assert kept[0].name in shell.stderr and "exited" in shell.stderr
        # the shell's end stops the container inspect started
        assert [c.status for c in list_containers(docker_backend, run_id=run_id)] == ["exited"]
    finally:
        gc(docker_backend, run_id=run_id)


@pytest.mark.container
def test_a_failed_environment_setup_keeps_its_container_stopped(
    env_settings, docker_client, synthetic_instances, tmp_path, docker_backend
):
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.environments.build import prepare_instance
    from orchestrator.setup.plan import SetupFailed

    recipes = json.loads(env_settings.environment.recipes_file.read_text())
    for recipe in recipes:
        recipe["install"] = "echo 'editable mode requires setup.py' >&2; exit 3"
    broken = tmp_path / "recipes.json"
    broken.write_text(json.dumps(recipes))
    settings = env_settings.replace(**{"recipes_file": broken})
    ctx = RunContext(settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / "run"))
    with pytest.raises(SetupFailed) as failed:
        prepare_instance(ctx, synthetic_instances["demo__units-1"])
    name = failed.value.container
    assert name == f"swe-green-{TEST_RUN_ID}-demo__units-1-setup"
    container = docker_client.containers.get(name)
    try:
        assert container.status == "exited"  # kept for inspection, not left running
    finally:
        container.remove(force=True)


@pytest.mark.container
def test_envs_prune_removes_the_least_recently_used_never_a_running_runs(
    docker_client, make_sandbox, tmp_path, docker_backend
):
    import os
    import time
    import uuid

    from orchestrator.housekeeping.active import active_run
    from orchestrator.housekeeping.image_use import record_image_use
    from orchestrator.housekeeping.prune import plan_prune
    from orchestrator.sandbox.models import LABEL_KIND

    prefix = f"swe-green-prune-{uuid.uuid4().hex[:8]}"
    data = tmp_path / "data"
    build_run = f"{TEST_RUN_ID}-prune"

    def image(kind: str, tag: str, start: str | None = None, instance: str = "") -> str:
        sandbox = make_sandbox(start, run_id=build_run, instance_id=instance)
        sandbox.exec(f"echo {tag} > /{kind}-{tag}.txt")
        name = f"{prefix}/{kind}:{tag}"
        sandbox.snapshot(name.split(":")[0], tag, labels={LABEL_KIND: kind})
        sandbox.remove()
        return name

    def used(name: str, days_ago: float) -> None:
        record_image_use(data, name)
        when = time.time() - days_ago * 86400
        marker = data / "image-use" / name.replace("/", "_").replace(":", "_")
        os.utime(marker, (when, when))

    old_env = image("env", "old")
    old_inst = image("instance", "old-1", old_env, "demo__old-1")
    new_env = image("env", "new")
    new_inst = image("instance", "new-1", new_env, "demo__new-1")
    mid_inst = image("instance", "mid-1", new_env, "demo__mid-1")
    used(old_env, 30), used(old_inst, 20), used(new_env, 0.5), used(new_inst, 0.1)
    used(mid_inst, 3)
    # a kept (stopped) container of a finished run that used the old instance image
    kept = make_sandbox(old_inst, run_id=f"{TEST_RUN_ID}-finished", instance_id="demo__old-1")
    kept.container.stop(timeout=1)
    env = {"SWE_GREEN_IMAGE_PREFIX": prefix, "SWE_GREEN_DATA_DIR": str(data), "COLUMNS": "200"}
    try:
        plan = plan_prune(docker_backend, data, prefix, keep_days=7)
        assert [i.tag for i in plan.remove] == [old_inst, old_env]  # the instance first
        assert plan.containers == [kept.name]
        # a size limit removes the least recently used until the rest fit: mid-1, then old
        sizes = {i.tag: i.size for i in plan.remove + plan.keep}
        rest = sizes[new_env] + sizes[new_inst]
        by_size = plan_prune(docker_backend, data, prefix, max_size=rest + sizes[mid_inst] - 1)
        assert [i.tag for i in by_size.remove] == [old_inst, old_env, mid_inst]
        # a run in progress (its marker) keeps its instance images and their environment
        with active_run(docker_backend, data, "run-in-progress", ["demo__mid-1"]):
            spared = plan_prune(docker_backend, data, prefix)
        assert {i.tag for i in spared.remove} == {old_inst, old_env, new_inst}
        assert {i.tag: i.protected for i in spared.keep if i.protected} == {
            mid_inst: "an instance of run run-in-progress in progress",
            new_env: f"the environment of {mid_inst}",
        }
        # a running container of another run protects its image without any marker
        busy = make_sandbox(new_inst, run_id=f"{TEST_RUN_ID}-busy", instance_id="demo__new-1")
        done = _swe_green(["envs", "prune", "--keep-days", "7"], env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "removed 2 image(s)" in done.stdout and f"container {kept.name}" in done.stdout
        left = {tag for i in docker_client.images.list(name=f"{prefix}/*") for tag in i.tags}
        assert left == {new_env, new_inst, mid_inst}
        everything = _swe_green(["envs", "prune"], env)
        assert everything.returncode == 0, everything.stderr
        assert f"kept {new_inst}: used by a container of run {TEST_RUN_ID}-busy" in (
            everything.stdout
        )
        left = {tag for i in docker_client.images.list(name=f"{prefix}/*") for tag in i.tags}
        assert left == {new_env, new_inst}
        busy.remove()
        bad = _swe_green(["envs", "prune", "--max-size", "lots"], env)
        assert bad.returncode == 2 and "is not a size" in bad.stderr
    finally:
        remove_images_under(docker_client, prefix)


@pytest.mark.container
def test_envs_prune_spares_the_images_a_live_run_uses_not_what_another_user_used_since(
    docker_client, make_sandbox, tmp_path, docker_backend
):
    """Two users, each with a data dir: user A's run in progress protects the images its
    lease names (those its containers started from), not an image user B used after A's
    run started."""
    import time
    import uuid

    from orchestrator.housekeeping.active import active_run
    from orchestrator.housekeeping.image_use import record_image_use
    from orchestrator.housekeeping.prune import plan_prune
    from orchestrator.leases import note_image, read_leases
    from orchestrator.sandbox.models import LABEL_KIND

    prefix = f"swe-green-prune-{uuid.uuid4().hex[:8]}"
    data_a, data_b = tmp_path / "data-a", tmp_path / "data-b"

    def image(kind: str, tag: str, start: str | None = None, instance: str = "") -> str:
        sandbox = make_sandbox(start, run_id=f"{TEST_RUN_ID}-prune", instance_id=instance)
        sandbox.exec(f"echo {tag} > /{kind}-{tag}.txt")
        name = f"{prefix}/{kind}:{tag}"
        sandbox.snapshot(name.split(":")[0], tag, labels={LABEL_KIND: kind})
        sandbox.remove()
        return name

    env = image("env", "e")
    of_a = image("instance", "a-1", env, "demo__a-1")
    of_b = image("instance", "b-1", env, "demo__b-1")
    run_a = f"{TEST_RUN_ID}-user-a"
    try:
        with active_run(docker_backend, data_a, run_a, ["demo__a-1"]):
            time.sleep(1.1)
            record_image_use(data_b, of_b)  # B used its image after A's run started
            plan = plan_prune(docker_backend, data_b, prefix)
            assert {i.tag for i in plan.remove} == {of_b}, [(i.tag, i.protected) for i in plan.keep]
            # A's run starts a container from B's image: its leases name it (not waiting
            # for the next heartbeat, 30 s away)
            note_image(run_a, of_b)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                plan = plan_prune(docker_backend, data_b, prefix)
                if not plan.remove:
                    break
                time.sleep(0.5)
            assert of_b in next(x for x in read_leases(data_a) if x.run_id == run_a).images
            assert {i.tag: i.protected for i in plan.keep if i.tag == of_b} == {
                of_b: f"used by run {run_a} in progress"
            }
        # the run ended: nothing of it protects anything
        after = plan_prune(docker_backend, data_b, prefix)
        assert {i.tag for i in after.remove} == {env, of_a, of_b}
    finally:
        remove_images_under(docker_client, prefix)


@pytest.mark.container
def test_envs_prune_keeps_the_shared_layers_an_environment_image_kept_builds_on(
    docker_client, make_sandbox, tmp_path, docker_backend
):
    """tools → history → environment → instance (setting share_layers): the shared images
    are never used themselves (the oldest), and stay while an environment on them stays."""
    import os
    import time
    import uuid

    from orchestrator.housekeeping.image_use import record_image_use
    from orchestrator.housekeeping.prune import plan_prune
    from orchestrator.sandbox.models import LABEL_KIND

    prefix = f"swe-green-prune-{uuid.uuid4().hex[:8]}"
    data = tmp_path / "data"

    def image(kind: str, tag: str, start: str | None = None, instance: str = "") -> str:
        sandbox = make_sandbox(start, run_id=f"{TEST_RUN_ID}-prune", instance_id=instance)
        sandbox.exec(f"echo {tag} > /{kind}-{tag}.txt")
        name = f"{prefix}/{kind}:{tag}"
        sandbox.snapshot(name.split(":")[0], tag, labels={LABEL_KIND: kind})
        sandbox.remove()
        return name

    def used(name: str, days_ago: float) -> None:
        record_image_use(data, name)
        when = time.time() - days_ago * 86400
        marker = data / "image-use" / name.replace("/", "_").replace(":", "_")
        os.utime(marker, (when, when))

    tools = image("env", "tools-py3.11-x")
    history = image("env", "history-demo__calc-x", tools)
    old_env = image("env", "old", history)
    old_inst = image("instance", "old-1", old_env, "demo__old-1")
    env = image("env", "new", history)
    inst = image("instance", "new-1", env, "demo__new-1")
    used(tools, 40), used(history, 40), used(old_env, 30), used(old_inst, 20)
    used(env, 10), used(inst, 0.1)
    try:
        plan = plan_prune(docker_backend, data, prefix, keep_days=7)
        assert [i.tag for i in plan.remove] == [old_inst, old_env]
        assert {i.tag for i in plan.keep} == {tools, history, env, inst}
        everything = plan_prune(docker_backend, data, prefix)
        assert {i.tag for i in everything.remove} == {tools, history, old_env, old_inst, env, inst}
    finally:
        remove_images_under(docker_client, prefix)


def _swe_green(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    from .cli_in_process import swe_green

    return swe_green(*args, env=env)


@pytest.mark.container
def test_gc_removes_the_idle_networks_a_killed_reinstall_left(
    docker_client, make_sandbox, docker_backend
):
    """A process killed mid-reinstall leaves its index-only network (no container on it): gc
    removes it once it is older than a set-up takes, and never one a sandbox uses."""
    import time

    from orchestrator.housekeeping.gc import gc
    from orchestrator.sandbox.models import LABEL_RUN, LABEL_TOOL

    run = f"{TEST_RUN_ID}-net"
    labels = {LABEL_TOOL: "1", LABEL_RUN: run}
    idle = docker_client.networks.create(f"{run}-idle", internal=True, labels=labels)
    used = docker_client.networks.create(f"{run}-used", internal=True, labels=labels)
    other = docker_client.networks.create(f"{run}-other", internal=True)  # not the tool's
    sandbox = make_sandbox(run_id=run)
    try:
        used.connect(sandbox.id)
        assert gc(docker_backend, run_id=run, dry_run=True).networks == []  # too young
        later = time.time() + 300
        seen = gc(docker_backend, run_id=run, dry_run=True, now=later)
        assert seen.networks == [idle.name]
        assert {n.name for n in docker_client.networks.list(names=[run])} >= {idle.name}
        sandbox.stop()
        plan = gc(docker_backend, run_id=run, now=later)
        assert idle.name in plan.networks
        left = {n.name for n in docker_client.networks.list()}
        assert idle.name not in left and other.name in left
        # the used one went only with its container (gc removed the stopped sandbox first)
        assert sandbox.name in plan.containers
    finally:
        for network in (idle, used, other):
            try:
                network.remove()
            except docker.errors.APIError:  # removed above, or in use after a failure above
                pass
