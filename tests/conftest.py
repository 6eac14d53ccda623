"""Shared fixtures. Container tests use the real engine and clean up by label."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .reference_data import SHARED_DATA

REPO_ROOT = Path(__file__).resolve().parents[1]
BASE_IMAGE = os.environ.get("SWE_GREEN_TEST_IMAGE", "swe-green/base:py3.11")
# every container and snapshot image made by this test session carries this run label
# scripts/test sets SWE_GREEN_TEST_TAG (4 hex) so that its leftover check counts only what its
# own sessions made, not the containers of other test sessions on a shared engine
_TAG = os.environ.get("SWE_GREEN_TEST_TAG", "")[:4]
TEST_RUN_ID = f"pytest-{_TAG}{uuid.uuid4().hex[: 8 - len(_TAG)]}"

# the test session's own settings (scripts/test sets them): every other SWE_GREEN_* variable
# is the caller's configuration of the product (a mirror directory, a dataset), not the tests'
SESSION_VARIABLES = frozenset(
    {"SWE_GREEN_TEST_TAG", "SWE_GREEN_TEST_IMAGE", "SWE_GREEN_A2A03_PYTHON"}
)


def _callers_settings() -> list[str]:
    return [
        name
        for name in os.environ
        if name.upper().startswith("SWE_GREEN_") and name.upper() not in SESSION_VARIABLES
    ]


def pytest_configure(config: pytest.Config) -> None:
    """The product's settings of the caller's environment go before anything is collected."""
    for name in _callers_settings():
        del os.environ[name]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``shared_data`` are skipped, naming the directory, where it is absent."""
    if SHARED_DATA.is_dir():
        return
    skip = pytest.mark.skip(reason=f"the reference data directory {SHARED_DATA} is absent")
    for item in items:
        if item.get_closest_marker("shared_data"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_settings_of_the_caller(monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """Each test starts without SWE_GREEN_* settings (a test that wants one sets it with
    ``monkeypatch``, which undoes it) and without a ``swe-green.toml`` of the working directory:
    the settings file is one that does not exist unless the test names its own."""
    for name in _callers_settings():
        monkeypatch.delenv(name)
    monkeypatch.setenv("SWE_GREEN_CONFIG", str(tmp_path_factory.getbasetemp() / "absent.toml"))


@pytest.fixture(scope="session")
def docker_backend():
    """The Docker backend of the sandbox; the test session's containers and images go after."""
    from orchestrator.sandbox import BackendUnavailable
    from orchestrator.sandbox.docker import connect

    try:
        backend = connect()
    except BackendUnavailable as exc:
        pytest.fail(f"container tests need a Docker engine: {exc}")
    yield backend
    from orchestrator.housekeeping.gc import gc

    gc(backend, run_id=TEST_RUN_ID, image_kinds=("snapshot", "instance", "env"))


@pytest.fixture(scope="session")
def docker_client(docker_backend):
    """The Docker SDK's client of the backend, for tests that look at the engine directly."""
    return docker_backend.client


@pytest.fixture(scope="session")
def base_image(docker_backend) -> str:
    if not docker_backend.images.exists(BASE_IMAGE):
        pytest.fail(f"base image {BASE_IMAGE} missing: run `swe-green images build --python 3.11`")
    return BASE_IMAGE


@pytest.fixture
def make_sandbox(docker_client, base_image) -> Iterator[Callable[..., object]]:
    """Start sandboxes labelled with the test run; all are removed after the test."""
    from orchestrator.sandbox.docker import DockerSandbox as Sandbox

    started: list[Sandbox] = []

    def make(image: str | None = None, **kwargs: object) -> Sandbox:
        kwargs.setdefault("run_id", TEST_RUN_ID)
        kwargs.setdefault("instance_id", "test")
        sandbox = Sandbox.start(docker_client, image or base_image, **kwargs)
        started.append(sandbox)
        return sandbox

    yield make
    for sandbox in started:
        sandbox.remove()


@pytest.fixture(scope="session")
def image_registry(tmp_path_factory) -> Iterator[str]:
    """An empty registry on 127.0.0.1 for the session (``host:port``); skips without
    Debian's docker-registry."""
    import shutil

    from .local_registry import local_registry

    if shutil.which("docker-registry") is None:
        pytest.skip("no docker-registry (Debian package docker-registry; scripts/setup --test)")
    with local_registry(tmp_path_factory.mktemp("registry")) as address:
        yield address


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory) -> Path:
    """The synthetic instances: mirrors, instances.jsonl, recipes.json."""
    from orchestrator.dataset.synthetic import build_synthetic

    return build_synthetic(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="session")
def test_prefix(docker_client, base_image) -> Iterator[str]:
    """An image prefix of this test session; the base image is tagged under it."""
    prefix = f"swe-green-test-{TEST_RUN_ID}"
    image = docker_client.images.get(base_image)
    image.tag(f"{prefix}/base", "py3.11")
    yield prefix
    remove_images_under(docker_client, prefix)


def remove_images_under(docker_client, prefix: str) -> None:
    """Remove every tag under ``prefix/`` (by tag, not by id: an image id with child images
    cannot be removed even by force, its tag can; the layers go with the last tag)."""
    import docker.errors

    for img in docker_client.images.list(name=f"{prefix}/*"):
        for tag in img.tags:
            if tag.startswith(prefix + "/"):
                try:
                    docker_client.images.remove(tag, force=True)
                except docker.errors.NotFound:
                    pass


@pytest.fixture(scope="session")
def env_settings(synthetic_dir, test_prefix, tmp_path_factory):
    """Settings for running the synthetic instances offline (local mirrors, own recipes)."""
    from orchestrator.settings import Settings

    return Settings(
        data_dir=tmp_path_factory.mktemp("data"),
        runs_dir=tmp_path_factory.mktemp("runs"),
        dataset=str(synthetic_dir / "instances.jsonl"),
        mirror_dir=synthetic_dir / "mirrors",
        recipes_file=synthetic_dir / "recipes.json",
        image_prefix=test_prefix,
        setup_strategy="recipe",
        memory="2g",
        cpus=1.0,
        unprivileged_tests=True,
        # the session's instances share one run id, and the engine is shared: no cap applies
        # unless a test sets one
        max_kept_per_run=100_000,
        max_kept_per_host=100_000,
    )


@pytest.fixture(scope="session")
def synthetic_instances(synthetic_dir) -> dict:
    from orchestrator.dataset.instances import load_instances

    return {i.instance_id: i for i in load_instances(str(synthetic_dir / "instances.jsonl"))}


@pytest.fixture(scope="session")
def instance_image(env_settings, docker_backend, tmp_path_factory) -> Callable[[object], str]:
    """``instance -> image``: the real instance image (phases 1-4), built on first use."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.environments.build import prepare_instance

    ctx = RunContext(
        env_settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path_factory.mktemp("eval-run"))
    )
    images: dict[str, str] = {}

    def get(instance) -> str:
        if instance.instance_id not in images:
            images[instance.instance_id] = prepare_instance(ctx, instance).instance_image
        return images[instance.instance_id]

    return get


@pytest.fixture
def grading_box(make_sandbox, instance_image, synthetic_instances, synthetic_dir):
    """``instance_id -> (sandbox, instance, recipe)``: a fresh container of a synthetic
    instance's image at the base commit, and its recipe."""
    import json

    from orchestrator.recipes.recipe import Recipe

    items = json.loads((synthetic_dir / "recipes.json").read_text())
    recipes = {item["repo"]: Recipe.model_validate(item) for item in items}

    def start(instance_id: str):
        instance = synthetic_instances[instance_id]
        sandbox = make_sandbox(instance_image(instance), instance_id=instance_id)
        return sandbox, instance, recipes[instance.repo]

    return start


@pytest.fixture
def run_ctx(env_settings, docker_backend, tmp_path):
    """A run context labelled with the test session's run id, in a fresh run directory."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir

    return RunContext(env_settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / "run"))


def cli_env(env_settings, runs_dir) -> dict[str, str]:
    """The environment for running the swe-green CLI on the synthetic instances."""
    env = dict(os.environ)
    env.update(
        SWE_GREEN_DATA_DIR=str(env_settings.storage.data_dir),
        SWE_GREEN_RUNS_DIR=str(runs_dir),
        SWE_GREEN_DATASET=str(env_settings.dataset.dataset),
        SWE_GREEN_MIRROR_DIR=str(env_settings.repos.mirror_dir),
        SWE_GREEN_RECIPES_FILE=str(env_settings.environment.recipes_file),
        SWE_GREEN_IMAGE_PREFIX=env_settings.environment.image_prefix,
        SWE_GREEN_SETUP_STRATEGY="recipe",
        SWE_GREEN_MEMORY="2g",
        SWE_GREEN_UNPRIVILEGED_TESTS="true",
        SWE_GREEN_MAX_KEPT_PER_RUN="100000",
        SWE_GREEN_MAX_KEPT_PER_HOST="100000",
    )
    return env


def run_cli(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    """``swe-green ARGS`` in its own session (so that tests can signal it), output piped.

    SIGINT gets its default disposition back first, as in a terminal: a test suite started in
    the background by a non-interactive shell inherits SIGINT ignored, and Python then never
    turns Ctrl-C into KeyboardInterrupt."""
    return subprocess.Popen(
        [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=_default_sigint, **kwargs,
    )  # fmt: skip


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
