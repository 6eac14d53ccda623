"""The restricted Docker policy, through a proxy that refuses what Amber's Docker gateway does.

The proxy (tests/gateway_proxy.py) sits on 127.0.0.1 in front of the real Docker socket; the
base image comes from a local registry (Debian's ``docker-registry``) and is pulled through
the proxy. A synthetic instance runs end to end with the gold participant: resolved, and not
one call refused.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import docker
import pytest

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.reference_participants import make_participant, running
from orchestrator.image_names import env_image_name, instance_image_name
from orchestrator.models import Status
from orchestrator.participant.protocol import A2AParticipant
from orchestrator.run.scheduler import run_evaluation
from orchestrator.sandbox.docker import DockerBackend
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.file_snapshot import ADDED, DELETED, MODIFIED, reduce_changes
from orchestrator.setup.plan import plan_environment
from orchestrator.tools.tool_protocol import ToolCall
from orchestrator.tools.tools_host import run_tool

from .conftest import TEST_RUN_ID
from .gateway_proxy import (
    CONTAINER,
    CREATE,
    CREATE_CONTAINER,
    EXEC,
    FORWARD,
    LABEL_FILTER,
    NETWORK,
    REFUSE,
    VOLUME,
    GatewayProxy,
    rule,
)

# What RDI-Foundation/amber runtime/docker-gateway/src/lib.rs (4a03039f) `handle` does with
# each kind of request, read from its code: (method, path, query) -> rule.
GATEWAY_TABLE = [
    ("GET", "/_ping", "", FORWARD),
    ("HEAD", "/_ping", "", REFUSE),  # is_ping takes GET only
    ("GET", "/version", "", FORWARD),
    ("GET", "/v1.41/info", "", FORWARD),
    ("GET", "/images/swe-green/base:py3.11/json", "", FORWARD),
    ("GET", "/v1.41/images/ghcr.io/org/swe-green-base:py3.11/json", "", FORWARD),
    ("GET", "/images/json", "", REFUSE),  # listing images
    ("GET", "/images/abc/history", "", REFUSE),
    ("DELETE", "/v1.41/images/swe-green/base:py3.11", "", REFUSE),
    ("POST", "/images/swe-green/base/tag", "repo=x&tag=y", REFUSE),
    ("POST", "/images/ghcr.io/org/x/push", "tag=py3.11", REFUSE),
    ("POST", "/v1.41/images/create", "fromImage=ghcr.io%2Forg%2Fx&tag=py3.11", FORWARD),
    ("POST", "/images/create", "fromSrc=-&repo=x", REFUSE),  # import
    ("POST", "/images/create", "fromImage=x&fromSrc=-", REFUSE),
    ("POST", "/images/create", "", REFUSE),
    ("POST", "/images/load", "", REFUSE),
    ("POST", "/build", "t=x", REFUSE),
    ("POST", "/v1.41/build", "", REFUSE),
    ("POST", "/commit", "container=abc&repo=x&tag=y", REFUSE),
    ("POST", "/v1.41/commit", "container=abc", REFUSE),
    ("GET", "/system/df", "", REFUSE),
    ("GET", "/containers/json", "all=1", LABEL_FILTER),
    ("GET", "/v1.41/events", "", LABEL_FILTER),
    ("GET", "/networks", "", LABEL_FILTER),
    ("GET", "/volumes", "", LABEL_FILTER),
    ("POST", "/containers/prune", "", LABEL_FILTER),
    ("POST", "/networks/prune", "", LABEL_FILTER),
    ("POST", "/volumes/prune", "", LABEL_FILTER),
    ("POST", "/containers/json", "", REFUSE),
    ("POST", "/v1.41/containers/create", "name=x", CREATE_CONTAINER),
    ("POST", "/networks/create", "", CREATE),
    ("POST", "/volumes/create", "", CREATE),
    ("GET", "/containers/create", "", REFUSE),
    ("POST", "/containers/abc/exec", "", CONTAINER),
    ("POST", "/v1.41/exec/123/start", "", EXEC),
    ("GET", "/exec/123/json", "", EXEC),
    ("POST", "/exec/123/resize", "h=1&w=1", EXEC),
    ("GET", "/containers/abc/json", "", CONTAINER),
    ("GET", "/containers/abc/changes", "", CONTAINER),
    ("GET", "/containers/abc/archive", "path=/testbed", CONTAINER),
    ("PUT", "/containers/abc/archive", "path=/tmp", CONTAINER),
    ("HEAD", "/containers/abc/archive", "path=/tmp", CONTAINER),
    ("GET", "/containers/abc/export", "", CONTAINER),
    ("POST", "/containers/abc/rename", "name=y", CONTAINER),
    ("POST", "/v1.41/containers/abc/kill", "", CONTAINER),
    ("DELETE", "/containers/abc", "force=1&v=1", CONTAINER),
    ("POST", "/containers/abc/attach", "stream=1", CONTAINER),
    ("GET", "/networks/bridge", "", NETWORK),  # refused unless owned: nobody owns bridge
    ("DELETE", "/networks/mine", "", NETWORK),
    ("POST", "/networks/bridge/disconnect", "", REFUSE),
    ("POST", "/v1.41/networks/abc/connect", "", REFUSE),
    ("GET", "/volumes/v1", "", VOLUME),
    ("GET", "/plugins", "", REFUSE),
    ("POST", "/swarm/init", "", REFUSE),
    ("GET", "/", "", REFUSE),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), GATEWAY_TABLE)
def test_the_proxy_refuses_exactly_what_the_gateway_code_refuses(method, path, query, expected):
    assert rule(method, path, query) == expected


def test_a_change_list_reduces_to_the_fewest_covering_paths():
    listed = [
        {"Path": "/opt", "Kind": MODIFIED},
        {"Path": "/opt/swe", "Kind": MODIFIED},
        {"Path": "/opt/swe/venv", "Kind": ADDED},
        {"Path": "/opt/swe/venv/bin", "Kind": ADDED},
        {"Path": "/testbed", "Kind": ADDED},
        {"Path": "/testbed/x.py", "Kind": ADDED},
        {"Path": "/etc/passwd", "Kind": MODIFIED},
        {"Path": "/root", "Kind": MODIFIED},
        {"Path": "/root/.cache", "Kind": ADDED},
        {"Path": "/tmp", "Kind": MODIFIED},
        {"Path": "/tmp/x", "Kind": ADDED},
        {"Path": "/usr/share/doc", "Kind": DELETED},
        {"Path": "/usr/share/doc/x", "Kind": DELETED},
        {"Path": "/usr/share", "Kind": MODIFIED},
        {"Path": "/usr", "Kind": MODIFIED},
        {"Path": "/var/lib/dpkg/status", "Kind": MODIFIED},
        {"Path": "/var/cache/apt/x.deb", "Kind": ADDED},
    ]
    changes = reduce_changes(listed)
    assert changes.added == ["/opt/swe/venv", "/testbed"]
    assert changes.modified == ["/etc/passwd", "/var/lib/dpkg/status"]
    assert changes.deleted == ["/usr/share/doc"]


# ----------------------------------------------------------------------------- container tests


@pytest.fixture(scope="module")
def registry(docker_client, base_image, image_registry):
    """The local registry holding the base image as <registry>/swe-green-base:py3.11, with
    no local tag of that name left (the restricted mode must pull it)."""
    repo = f"{image_registry}/swe-green-base"
    docker_client.images.get(base_image).tag(repo, "py3.11")
    pushed = list(docker_client.images.push(repo, "py3.11", stream=True, decode=True))
    assert not [line for line in pushed if "error" in line], pushed
    docker_client.images.remove(f"{repo}:py3.11")  # the tag only: the image stays
    yield repo
    try:
        docker_client.images.remove(f"{repo}:py3.11")
    except docker.errors.ImageNotFound:
        pass


@pytest.fixture
def proxy():
    gateway = GatewayProxy()
    yield gateway
    gateway.close()


@pytest.mark.container
def test_a_synthetic_instance_resolves_through_the_gateway_with_no_call_refused(
    env_settings, synthetic_dir, synthetic_instances, registry, proxy, tmp_path,
    docker_client, base_image,
):  # fmt: skip
    settings = env_settings.replace(
        **{
            "docker_policy": "restricted",
            "base_image_registry": registry,
            "registry_pythons": "3.11",
            "data_dir": tmp_path / "data",
            "keep_containers": "never",
        }
    )
    backend = DockerBackend(docker.DockerClient(base_url=proxy.url), restricted=True)
    ctx = RunContext(settings, backend, TEST_RUN_ID, RunDir(tmp_path / "run"))
    dataset = str(synthetic_dir / "instances.jsonl")
    instance = synthetic_instances["demo__units-1"]
    plan = plan_environment(ctx, instance)
    # images named like this instance's on the engine (a full-policy run's, say) are not
    # this backend's cache: it builds what it runs (the set-up runs, below)
    prefix = ctx.settings.environment.image_prefix
    planted = [
        env_image_name(prefix, instance.owner_name, plan.env_key),
        instance_image_name(prefix, instance.instance_id, plan.instance_key(instance)),
    ]
    for name in planted:
        docker_client.images.get(base_image).tag(name)
    try:
        with running(make_participant("gold", dataset=dataset)) as url:
            [result] = asyncio.run(
                run_evaluation(ctx, [instance], A2AParticipant(url=url), concurrency=1)
            )
    finally:
        for name in planted:
            docker_client.images.remove(name)
    endpoints = Counter(call.endpoint() for call in proxy.calls)
    (tmp_path / "calls.json").write_text(json.dumps(endpoints, indent=1))
    print("Docker API calls through the gateway proxy:", json.dumps(endpoints, indent=1))
    assert result.status == Status.RESOLVED, result.message
    assert [(c.method, c.path) for c in proxy.refused()] == []
    assert endpoints["POST /images/create"] == 1  # the base image came from the registry
    # the two set-up containers (phases 1-3, then phase 4 from their files) had the network;
    # validation, participant and grading none
    modes = [c.network_mode for c in proxy.calls if c.network_mode is not None]
    assert modes[:2] == ["bridge", "bridge"] and set(modes[2:]) == {"none"}, modes
    assert len(modes) >= 5, modes
    assert not list((tmp_path / "data" / "files").glob("*.tar"))  # the host copy is gone


@pytest.mark.container
def test_switching_the_network_moves_the_files_into_a_new_container(base_image, proxy):
    client = docker.DockerClient(base_url=proxy.url)
    sandbox = Sandbox.start(
        client, base_image, run_id=TEST_RUN_ID, instance_id="move", restricted=True,
        network=False, name=f"swe-green-{TEST_RUN_ID}-move",
    )  # fmt: skip
    try:
        interfaces = "ls /sys/class/net"
        assert sandbox.exec(interfaces).stdout.split() == ["lo"]
        sandbox.exec("mkdir -p /testbed && echo kept > /testbed/f && rm -rf /usr/share/doc/git")
        sandbox.set_network(True)
        assert sorted(sandbox.exec(interfaces).stdout.split()) == ["eth0", "lo"]
        assert sandbox.exec("cat /testbed/f").stdout == "kept\n"
        assert sandbox.exec("test -e /usr/share/doc/git").exit_code == 1
        sandbox.set_network(False)
        assert sandbox.exec(interfaces).stdout.split() == ["lo"]
        assert sandbox.exec("cat /testbed/f").stdout == "kept\n"
        assert sandbox.name == f"swe-green-{TEST_RUN_ID}-move"
        assert [c.endpoint() for c in proxy.calls if c.endpoint().endswith("rename")]
    finally:
        sandbox.remove()
    assert proxy.refused() == []


@pytest.mark.container
def test_the_sandbox_tools_and_their_server_run_with_no_call_refused(base_image, proxy):
    client = docker.DockerClient(base_url=proxy.url)
    sandbox = Sandbox.start(
        client, base_image, run_id=TEST_RUN_ID, instance_id="tools", restricted=True,
        network=False, name=f"swe-green-{TEST_RUN_ID}-tools",
    )  # fmt: skip

    def call(name: str, **arguments: object) -> str:
        result = run_tool(sandbox, ToolCall(id="t", name=name, arguments=arguments), timeout=60)
        assert not result.error, result.output
        return result.output

    try:
        call("edit", command="create", path="/testbed/a.py", file_text="x = 1\n")
        assert call("view", path="/testbed/a.py") == "     1\tx = 1"
        assert call("search", pattern="x =").startswith("/testbed/a.py:1: x = 1")
        assert call("bash", command="cat /testbed/a.py") == "x = 1\n"
        sandbox.set_network(True)  # a new container: the server starts again there
        assert call("view", path="/testbed/a.py") == "     1\tx = 1"
    finally:
        sandbox.remove()
    assert proxy.refused() == []


@pytest.mark.container
def test_a_reinstall_under_the_restricted_policy_runs_without_network(
    env_settings, synthetic_instances, proxy, tmp_path
):
    from orchestrator.environments.build import prepare_instance
    from orchestrator.environments.prepared import recipe_of
    from orchestrator.grading.reinstall.contained import reinstall_after_patch

    from .test_reinstall import ADD_DEPENDENCY, PYPI_PROBE

    # no registry: the local base image, found by inspect (the gateway refuses listing)
    settings = env_settings.replace(
        **{"docker_policy": "restricted", "data_dir": tmp_path / "data"}
    )
    backend = DockerBackend(docker.DockerClient(base_url=proxy.url), restricted=True)
    ctx = RunContext(settings, backend, TEST_RUN_ID, RunDir(tmp_path / "run"))
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(ctx, instance)
    # kept by the backend as the set-up's files on the host (no commit), over an image
    assert prepared.snapshot.archive is not None and prepared.snapshot.archive.is_file()
    assert prepared.snapshot.image != prepared.instance_image
    recipe = recipe_of(prepared).model_copy(update={"install": "python -m pip install -e ."})
    sandbox = ctx.start_sandbox(prepared.snapshot, instance, "grading", network=False)
    try:
        assert sandbox.exec("cd /testbed && git status --short").stdout == ""
        sandbox.write_file("/tmp/dep.patch", ADD_DEPENDENCY)
        assert sandbox.exec("cd /testbed && git apply /tmp/dep.patch").exit_code == 0
        # no network changes here, so no index-only network: the install stays offline (the
        # bridge would reach any host), and the new dependency cannot be fetched
        ok, tail = reinstall_after_patch(sandbox, recipe, ADD_DEPENDENCY, timeout=300)
        assert not ok and "(network: none, the restricted Docker policy allows no network" in tail
        assert not sandbox.exec("source /opt/swe/activate.sh && python -c 'import six'").ok
        assert sandbox.exec(PYPI_PROBE, timeout=60).exit_code != 0
        assert not sandbox.network and sandbox.is_running()
    finally:
        sandbox.remove()
        prepared.discard()
    assert proxy.refused() == []


@pytest.mark.container
def test_an_assessment_served_under_the_restricted_policy_makes_no_refused_call(
    env_settings, proxy, tmp_path, monkeypatch
):
    """The A2A server as Amber runs it: its Docker engine is the gateway (DOCKER_HOST)."""
    from .test_server import _request, assess, final_status, green_agent

    monkeypatch.setenv("DOCKER_HOST", proxy.url)
    settings = env_settings.replace(
        **{
            "docker_policy": "restricted",
            "runs_dir": tmp_path / "runs",
            "data_dir": tmp_path / "data",
            "serve_allowed_hosts": "127.0.0.1",
        }
    )
    with (
        running(make_participant("gold", dataset=settings.dataset.dataset)) as gold_url,
        green_agent(settings) as url,
    ):
        state, message = final_status(assess(url, _request(gold_url, instance_ids="demo__calc-1")))
    assert state == "TASK_STATE_COMPLETED", message
    (run_dir,) = (tmp_path / "runs").iterdir()
    result = json.loads((run_dir / "instances" / "demo__calc-1" / "result.json").read_text())
    assert result["status"] == "resolved", result
    assert [(c.method, c.path) for c in proxy.refused()] == []


@pytest.mark.container
def test_a_contained_reinstall_under_the_restricted_policy_makes_no_refused_call(
    env_settings, synthetic_instances, proxy, tmp_path
):
    from orchestrator.context.successor import successor
    from orchestrator.environments.build import prepare_instance
    from orchestrator.environments.prepared import recipe_of
    from orchestrator.grading.reinstall.contained import contained_reinstall

    from .test_reinstall import HONEST_SETUP_PY, TAMPERING_SETUP_PY

    settings = env_settings.replace(
        **{"docker_policy": "restricted", "data_dir": tmp_path / "data"}
    )
    backend = DockerBackend(docker.DockerClient(base_url=proxy.url), restricted=True)
    ctx = RunContext(settings, backend, TEST_RUN_ID, RunDir(tmp_path / "run"))
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(ctx, instance)
    recipe = recipe_of(prepared)
    try:
        for patch, refused in ((HONEST_SETUP_PY, []), (TAMPERING_SETUP_PY, ["calc/__init__.py"])):
            sandbox = ctx.start_sandbox(prepared.snapshot, instance, "grading", network=False)
            try:
                sandbox.write_file("/tmp/p.patch", patch)
                assert sandbox.exec("cd /testbed && git apply /tmp/p.patch").exit_code == 0
                fresh_from = successor(ctx, instance, "grading")
                with contained_reinstall(sandbox, recipe, patch, 300, fresh_from) as (fresh, done):
                    assert done is not None and done.ok, done
                    names = [p.split(" (")[0].removeprefix("/testbed/") for p in done.refused]
                    assert names == refused, done.refused
                    assert fresh.name != sandbox.name and fresh.is_running()
                    if not refused:  # the build's files, carried over without a commit
                        assert fresh.exec("test -s /testbed/calc/_version.py").exit_code == 0
            finally:
                sandbox.remove()
    finally:
        prepared.discard()
    assert proxy.refused() == []
    assert not list((tmp_path / "data" / "files").glob("*.tar"))  # the packs are gone
