"""A run across the Docker hosts of a Ray cluster: a head and two worker nodes on this machine,
each a separate set of Ray processes (``ray.cluster_utils.Cluster``), on 127.0.0.1, driving
the real Docker engine on the synthetic instances. The worker nodes share this machine's
engine, as two Docker hosts would not; the containers' node labels tell them apart."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import pytest

# every node on 127.0.0.1: Ray otherwise turns a loopback address into this host's address,
# on which a node bound to loopback does not answer (read when ray is first imported)
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.errors import UserError
from orchestrator.frontends.reference_participants import make_participant, running
from orchestrator.housekeeping.inventory import list_containers
from orchestrator.housekeeping.reaper import remove_dead_node_containers
from orchestrator.models import Reason, Status
from orchestrator.participant.protocol import A2AParticipant
from orchestrator.run.ray_runner import RayRunner
from orchestrator.run.scheduler import run_evaluation
from orchestrator.sandbox.models import LABEL_NODE

from .conftest import TEST_RUN_ID

pytestmark = pytest.mark.container

ALL = ["demo__calc-1", "demo__textkit-1", "demo__units-1"]
SLOTS = "sandbox_slots"
# a dead node is known within a few seconds (the defaults take about half a minute)
FAST_FAILURE = {"health_check_period_ms": 500, "health_check_failure_threshold": 4}


def _add_worker(cluster: Cluster):
    return cluster.add_node(
        num_cpus=1, resources={SLOTS: 1}, node_ip_address="127.0.0.1",
        object_store_memory=80 * 1024 * 1024,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cluster():
    """A head without slots (the driver's node) and two worker nodes with one slot each."""
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False,
            "object_store_memory": 80 * 1024 * 1024, "_system_config": FAST_FAILURE,
        },
    )  # fmt: skip
    workers = [_add_worker(cluster), _add_worker(cluster)]
    cluster.wait_for_nodes()
    yield cluster, workers
    if ray.is_initialized():
        ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def gold_url(synthetic_dir):
    with running(make_participant("gold", dataset=str(synthetic_dir / "instances.jsonl"))) as url:
        yield url


def _ray_ctx(env_settings, docker_backend, tmp_path, address: str, run_id: str) -> RunContext:
    settings = env_settings.model_copy(
        update={"run": env_settings.run.model_copy(update={"ray_address": address})}
    )
    return RunContext(settings, docker_backend, run_id, RunDir(tmp_path / "run"))


def test_a_run_on_two_worker_nodes_resolves_every_instance_like_a_local_run(
    cluster, env_settings, docker_backend, synthetic_instances, gold_url, tmp_path
):
    ray_cluster, (one, two) = cluster
    ctx = _ray_ctx(env_settings, docker_backend, tmp_path, ray_cluster.address, TEST_RUN_ID)
    events = []
    results = asyncio.run(
        run_evaluation(
            ctx,
            [synthetic_instances[i] for i in ALL],
            A2AParticipant(url=gold_url),
            on_event=events.append,
        )
    )
    assert [(r.instance_id, r.status) for r in results] == [(i, Status.RESOLVED) for i in ALL]
    # the run directory is the driver's, with the files each node sent back
    for result in results:
        files = {p.name for p in ctx.run_dir.instance_dir(result.instance_id).iterdir()}
        assert {"result.json", "patch.diff", "eval.sh", "setup.log", "transcript.jsonl"} <= files
        assert result.logs["setup"] == "setup.log"
        assert result.node in {one.node_id, two.node_id}
    assert {r.node for r in results} == {one.node_id, two.node_id}  # both nodes worked
    # progress as in a local run: the nodes' phases reached the driver
    phases = {(e.instance_id, e.phase) for e in events if e.kind == "phase"}
    assert {(i, "grading") for i in ALL} <= phases
    assert events[-1].kind == "run_finished" and events[-1].statuses == {"resolved": 3}
    assert list_containers(docker_backend, run_id=TEST_RUN_ID) == []
    assert not ray.is_initialized()  # the runner let go of the cluster


def _run_and_lose_a_node(cluster, settings, docker_backend, instances, url, run_dir, run_id):
    """Run ``instances`` on the cluster and kill its first worker node (no grace) as soon as
    a container of it appears; the node then comes back under a new id. Returns the results,
    the instances that were on the dead node, and that node."""
    ray_cluster, workers = cluster
    victim = workers[0]
    ctx = RunContext(settings, docker_backend, run_id, RunDir(run_dir))
    killed: list[str] = []

    def kill_the_victim_mid_instance() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            on_victim = [
                c for c in list_containers(docker_backend, run_id=run_id)
                if c.labels.get(LABEL_NODE) == victim.node_id
            ]  # fmt: skip
            if on_victim:
                killed.extend(c.instance_id for c in on_victim)
                ray_cluster.remove_node(victim, allow_graceful=False)
                return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_the_victim_mid_instance, daemon=True)
    killer.start()
    try:
        results = asyncio.run(run_evaluation(ctx, instances, A2AParticipant(url=url)))
    finally:
        killer.join(timeout=5)
        workers[0] = _add_worker(ray_cluster)  # the node comes back for the other tests
    assert killed, "no container of the victim node was seen"
    # every instance has exactly one result, in the driver's run directory
    assert sorted(r.instance_id for r in results) == sorted(i.instance_id for i in instances)
    stored = sorted(p.parent.name for p in (run_dir / "instances").glob("*/result.json"))
    assert stored == sorted(r.instance_id for r in results)
    # nothing of the run is left, the dead node's containers neither (removed by the other
    # node, which shares the engine here; on a host of its own, when its node comes back)
    assert list_containers(docker_backend, run_id=run_id) == []
    left = [c for c in docker_backend.containers() if c.labels.get(LABEL_NODE) == victim.node_id]
    assert left == []
    return {r.instance_id: r for r in results}, killed[0], victim


def test_a_node_lost_mid_instance_runs_it_again_on_another_node_and_nothing_is_left(
    cluster, env_settings, docker_backend, synthetic_instances, gold_url, tmp_path
):
    settings = env_settings.replace(ray_address=cluster[0].address)
    results, moved, _ = _run_and_lose_a_node(
        cluster, settings, docker_backend, [synthetic_instances[i] for i in ALL], gold_url,
        tmp_path / "run", f"{TEST_RUN_ID}-loss",
    )  # fmt: skip
    assert [r.status for r in results.values()] == [Status.RESOLVED] * 3
    assert results[moved].node == cluster[1][1].node_id  # graded on the node that lived


def test_with_no_retries_left_the_lost_instance_is_an_infrastructure_error(
    cluster, env_settings, docker_backend, synthetic_instances, gold_url, tmp_path
):
    settings = env_settings.replace(ray_address=cluster[0].address, ray_max_retries=0)
    results, lost, _ = _run_and_lose_a_node(
        cluster, settings, docker_backend, [synthetic_instances[i] for i in ALL[:2]], gold_url,
        tmp_path / "run", f"{TEST_RUN_ID}-noretry",
    )  # fmt: skip
    assert (results[lost].status, results[lost].reason) == (Status.ERROR, Reason.INFRASTRUCTURE)
    assert "1 attempt(s)" in results[lost].message
    other = next(r for iid, r in results.items() if iid != lost)
    assert other.status == Status.RESOLVED


def test_containers_of_a_dead_node_are_removed_and_others_stay(docker_backend, make_sandbox):
    from orchestrator.sandbox import SandboxSpec

    def start(node: str):
        spec = SandboxSpec(run_id=TEST_RUN_ID, instance_id="reap", role="setup", node=node)
        return docker_backend.start("swe-green/base:py3.11", spec)

    dead, alive, single_host = start("dead-node"), start("alive-node"), start("")
    try:
        removed = remove_dead_node_containers(docker_backend, {"alive-node"})
        assert removed == [dead.name]
        assert not dead.exists() and alive.exists() and single_host.exists()
    finally:
        for sandbox in (dead, alive, single_host):
            sandbox.remove()


def test_a_cluster_without_docker_hosts_is_refused_with_the_fix(cluster, env_settings):
    ray_cluster, _ = cluster
    settings = env_settings.model_copy(
        update={
            "run": env_settings.run.model_copy(
                update={"ray_address": ray_cluster.address, "ray_slots_resource": "no_such_slots"}
            )
        }
    )
    with pytest.raises(UserError) as caught:
        RayRunner.connect(settings)
    assert "offers no 'no_such_slots'" in caught.value.problem
    assert "ray start --address" in caught.value.fix
    assert not ray.is_initialized()


def test_the_runs_settings_reach_the_nodes(env_settings, monkeypatch):
    """What a node reads of the settings: the driver's, but for the host paths it sets."""
    from orchestrator.run.ray_node import on_this_node

    monkeypatch.setenv("SWE_GREEN_MIRROR_DIR", "/srv/node-mirrors")
    mine = on_this_node(env_settings)
    assert str(mine.repos.mirror_dir) == "/srv/node-mirrors"
    assert mine.storage.data_dir == env_settings.storage.data_dir
    assert json.loads(mine.sandbox.model_dump_json()) == json.loads(
        env_settings.sandbox.model_dump_json()
    )


def test_the_cli_runs_on_the_cluster_with_ray(cluster, env_settings, tmp_path):
    """`swe-green run --ray ADDRESS`: the reference participant, the live display, the run
    directory and results.json as in a local run; the result says which node ran it."""
    from .conftest import cli_env, run_cli

    ray_cluster, workers = cluster
    run_dir = tmp_path / "runs" / "on-ray"
    proc = run_cli(
        ["run", "--participant", "gold", "--id", "demo__units-1", "--output", str(run_dir),
         "--ray", ray_cluster.address],
        {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"},
    )  # fmt: skip
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "1/1 demo__units-1: resolved" in out
    result = json.loads((run_dir / "instances" / "demo__units-1" / "result.json").read_text())
    assert result["status"] == "resolved" and result["node"] in {w.node_id for w in workers}
    assert json.loads((run_dir / "results.json").read_text())["results"][0]["resolved_pct"] == 1.0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["settings"]["ray_address"] == ray_cluster.address


def test_the_green_agent_evaluates_an_assessment_on_the_cluster(cluster, env_settings, tmp_path):
    """`serve` with SWE_GREEN_RAY_ADDRESS: an A2A assessment whose instance runs on a node."""
    from orchestrator.frontends.reference_participants import make_participant, running

    from .test_server import _request, assess, final_status, green_agent

    ray_cluster, workers = cluster
    settings = env_settings.replace(
        runs_dir=tmp_path / "runs", keep_containers="never", ray_address=ray_cluster.address
    )
    gold = make_participant("gold", dataset=settings.dataset.dataset)
    with running(gold) as gold_url, green_agent(settings, heartbeat=5.0) as url:
        events = assess(url, _request(gold_url, instance_ids="demo__calc-1"))
    state, text = final_status(events)
    assert state == "TASK_STATE_COMPLETED", text
    (run_dir,) = (tmp_path / "runs").iterdir()
    result = json.loads((run_dir / "instances" / "demo__calc-1" / "result.json").read_text())
    assert result["status"] == "resolved"
    assert result["node"] in {w.node_id for w in workers}


def test_a_predictions_file_is_graded_on_the_cluster(
    cluster, env_settings, synthetic_instances, tmp_path
):
    """`swe-green run --predictions FILE --ray ADDRESS`: the file's patch reaches the node."""
    from .conftest import cli_env, run_cli

    ray_cluster, workers = cluster
    predictions = tmp_path / "preds.jsonl"
    row = {"instance_id": "demo__units-1", "model_name_or_path": "agent-x",
           "model_patch": synthetic_instances["demo__units-1"].patch}  # fmt: skip
    predictions.write_text(json.dumps(row) + "\n")
    run_dir = tmp_path / "runs" / "predictions-on-ray"
    proc = run_cli(
        ["run", "--predictions", str(predictions), "--output", str(run_dir),
         "--ray", ray_cluster.address],
        {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"},
    )  # fmt: skip
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    result = json.loads((run_dir / "instances" / "demo__units-1" / "result.json").read_text())
    assert result["status"] == "resolved" and result["node"] in {w.node_id for w in workers}
    assert json.loads((run_dir / "results.json").read_text())["participants"]["agent"] == "agent-x"
