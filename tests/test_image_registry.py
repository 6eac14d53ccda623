"""The shared registry of environment images (setting ``env_image_registry``): a host that
lacks an environment image pulls it instead of building it, and pushes what it built. The
container tests use a real registry on 127.0.0.1 (Debian's ``docker-registry``)."""

from __future__ import annotations

import uuid

import docker
import pytest

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.environments.build import prepare_instance
from orchestrator.environments.env_image import ensure_env_image
from orchestrator.environments.image_registry import (
    pull_shared,
    push_shared,
    registry_reference,
)
from orchestrator.errors import UserError
from orchestrator.housekeeping.prune import cached_images
from orchestrator.image_names import env_image_name
from orchestrator.sandbox.docker import DockerBackend
from orchestrator.sandbox.local import LocalBackend
from orchestrator.settings import load_settings
from orchestrator.setup.plan import plan_environment

from .conftest import TEST_RUN_ID
from .gateway_proxy import GatewayProxy

SETUP_RAN = "===== setup ("  # what _run_logged writes to setup.log for the set-up script


def test_an_image_maps_to_one_registry_reference() -> None:
    name = "swe-green/env:sympy__sympy-ccc35aeb651171bc"
    assert registry_reference("10.0.0.5:5000", name) == f"10.0.0.5:5000/{name}"
    assert registry_reference("reg.example.org/team/", name) == f"reg.example.org/team/{name}"
    other = "swe-green/env:sympy__sympy-57e26f85a9ad995c"
    assert registry_reference("h:5000", name) != registry_reference("h:5000", other)


@pytest.mark.parametrize(
    ("given", "kept"),
    [("127.0.0.1:5000", "127.0.0.1:5000"), ("reg.example.org/team/", "reg.example.org/team"),
     (" ", None), ("", None)],
)  # fmt: skip
def test_the_setting_takes_a_registry_host(given: str, kept: str | None) -> None:
    assert load_settings(env_image_registry=given).environment.env_image_registry == kept


@pytest.mark.parametrize("bad", ["http://10.0.0.5:5000", "host:port", "host:5000/Team", "-x"])
def test_a_setting_that_is_no_registry_host_is_one_clear_error(bad: str) -> None:
    with pytest.raises(UserError) as caught:
        load_settings(env_image_registry=bad)
    assert "env_image_registry" in str(caught.value)
    assert "the value given for env_image_registry" in str(caught.value.fix)


def test_the_setting_has_its_flat_environment_name(monkeypatch) -> None:
    monkeypatch.setenv("SWE_GREEN_ENV_IMAGE_REGISTRY", "10.0.0.5:5000")
    assert load_settings().environment.env_image_registry == "10.0.0.5:5000"


def test_a_backend_without_registry_means_build_and_no_push(tmp_path) -> None:
    log = tmp_path / "setup.log"
    backend = LocalBackend()
    assert pull_shared(backend, "h:5000", "p/env:x-1", log) is None
    assert push_shared(backend, "h:5000", "p/env:x-1", log) is False
    text = log.read_text()
    assert "h:5000/p/env:x-1 not in the registry: building" in text
    # a store that pushes nothing (local; the restricted policy) is no failure: no warning
    assert "environment image not pushed to h:5000/p/env:x-1: the local backend has" in text
    assert "warning" not in text


# ----------------------------------------------------------------------------- container tests


@pytest.fixture
def own_prefix(docker_backend, base_image, test_prefix):
    """An image prefix of this test only (so no other test's instance image holds its
    environment image), with the base image tagged under it."""
    prefix = f"{test_prefix}-{uuid.uuid4().hex[:6]}"
    docker_backend.images.tag(base_image, f"{prefix}/base", "py3.11")
    yield prefix
    tags = [tag for image in docker_backend.images.find() for tag in image.tags if prefix in tag]
    for tag in sorted(tags, key=lambda tag: "/instance:" not in tag):  # children first
        docker_backend.images.remove(tag)


def _ctx(env_settings, backend, tmp_path, node: str, **changes) -> RunContext:
    settings = env_settings.replace(
        **{"data_dir": tmp_path / node / "data", "keep_containers": "never", **changes}
    )
    return RunContext(settings, backend, TEST_RUN_ID, RunDir(tmp_path / node / "run"))


@pytest.mark.container
def test_a_node_pulls_the_environment_another_built_and_pushed(
    env_settings, docker_backend, synthetic_instances, image_registry, own_prefix, tmp_path
):
    instance = synthetic_instances["demo__calc-1"]
    a = _ctx(env_settings, docker_backend, tmp_path, "a",
             image_prefix=own_prefix, env_image_registry=image_registry)  # fmt: skip
    plan = plan_environment(a, instance)
    name = env_image_name(a.settings.environment.image_prefix, instance.owner_name, plan.env_key)
    reference = registry_reference(image_registry, name)
    log_a = tmp_path / "a.log"
    built = ensure_env_image(a, instance, plan, log_a)  # the registry is empty: a miss
    assert not built.cache_hit
    text = log_a.read_text()
    assert f"{reference} not in the registry: building" in text
    assert SETUP_RAN in text and f"environment image pushed to {reference}" in text
    assert not docker_backend.images.exists(reference)  # the push's tag is gone again

    assert docker_backend.images.remove(name)  # node B: this engine without the image
    assert not docker_backend.images.exists(name)
    b = _ctx(env_settings, docker_backend, tmp_path, "b",
             image_prefix=own_prefix, env_image_registry=image_registry)  # fmt: skip
    log_b = tmp_path / "b.log"
    pulled = ensure_env_image(b, instance, plan_environment(b, instance), log_b)
    text = log_b.read_text()
    assert f"{reference} pulled from the registry" in text
    assert SETUP_RAN not in text and "pushed" not in text  # no set-up ran, nothing pushed
    assert pulled.cache_hit and pulled.name == name
    assert (pulled.python, pulled.test_cmd) == (built.python, built.test_cmd)  # the labels
    assert docker_backend.images.exists(name) and not docker_backend.images.exists(reference)
    # phase 4 on top of the pulled environment; its instance image is pushed in turn
    prepared = prepare_instance(b, instance)
    assert prepared.env_cache_hit and not prepared.instance_cache_hit
    text = (b.instance_dir(instance) / "setup.log").read_text()
    assert "===== base-commit" in text and "instance image pushed to" in text

    # node C: neither image here; both come from the registry, nothing is set up
    assert docker_backend.images.remove(str(prepared.instance_image))
    assert docker_backend.images.remove(name)
    c = _ctx(env_settings, docker_backend, tmp_path, "c",
             image_prefix=own_prefix, env_image_registry=image_registry)  # fmt: skip
    again = prepare_instance(c, instance)
    assert again.env_cache_hit and again.instance_cache_hit
    assert again.instance_image == prepared.instance_image
    text = (c.instance_dir(instance) / "setup.log").read_text()
    assert text.count("pulled from the registry") == 2
    assert SETUP_RAN not in text and "=====" not in text
    # a pulled instance image has no parent link: `envs prune` finds its environment by key
    cached = {i.tag: i for i in cached_images(docker_backend, tmp_path / "c", own_prefix)}
    assert cached[str(again.instance_image)].parent == cached[name].id
    result = c.start_sandbox(again.instance_image, instance, "check", network=False)
    try:
        assert result.exec("test -d /testbed/.git && test -f /opt/swe/activate.sh").ok
    finally:
        result.remove()


@pytest.mark.container
def test_an_unreachable_registry_means_build_and_a_warning(
    env_settings, docker_backend, synthetic_instances, own_prefix, tmp_path
):
    from .local_registry import free_port

    instance = synthetic_instances["demo__units-1"]
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens there
    ctx = _ctx(env_settings, docker_backend, tmp_path, "a",
               image_prefix=own_prefix, env_image_registry=nowhere)  # fmt: skip
    log = tmp_path / "setup.log"
    built = ensure_env_image(ctx, instance, plan_environment(ctx, instance), log)
    assert not built.cache_hit and docker_backend.images.exists(built.name)
    text = log.read_text()
    assert "not in the registry: building" in text and SETUP_RAN in text
    assert f"warning: environment image not pushed to {nowhere}/" in text


@pytest.mark.container
def test_the_restricted_policy_pulls_the_environment_and_sets_up_no_more(
    env_settings, docker_backend, synthetic_instances, image_registry, own_prefix, tmp_path
):
    """Under Amber's gateway (no commit, tag or push) a pushed environment is pulled and
    used under its registry reference: phase 4 only, no call refused."""
    instance = synthetic_instances["demo__textkit-1"]
    full = _ctx(env_settings, docker_backend, tmp_path, "full",
                image_prefix=own_prefix, env_image_registry=image_registry)  # fmt: skip
    plan = plan_environment(full, instance)
    built = ensure_env_image(full, instance, plan, tmp_path / "full.log")
    reference = registry_reference(image_registry, built.name)
    assert docker_backend.images.remove(built.name)
    proxy = GatewayProxy()
    try:
        backend = DockerBackend(docker.DockerClient(base_url=proxy.url), restricted=True)
        ctx = _ctx(env_settings, backend, tmp_path, "restricted", image_prefix=own_prefix,
                   env_image_registry=image_registry, docker_policy="restricted")  # fmt: skip
        prepared = prepare_instance(ctx, instance)
        try:
            text = (ctx.instance_dir(instance) / "setup.log").read_text()
            assert f"{reference} pulled from the registry" in text
            assert SETUP_RAN not in text and "===== base-commit" in text
            assert prepared.env_image == reference and prepared.env_cache_hit
            assert prepared.python_used == built.python
        finally:
            prepared.discard()
        assert [(c.method, c.path) for c in proxy.refused()] == []
    finally:
        proxy.close()
        docker_backend.images.remove(reference)
