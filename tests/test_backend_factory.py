"""settings → backend: one factory for the CLI, the server, the run driver and Ray nodes."""

from __future__ import annotations

import pytest

from orchestrator.sandbox import BackendUnavailable
from orchestrator.sandbox.docker import DockerBackend
from orchestrator.sandbox.factory import backend_from
from orchestrator.sandbox.local import LocalBackend
from orchestrator.settings import Settings


def test_the_local_backend_needs_no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # nothing answers there
    backend = backend_from(Settings(backend="local"))
    assert isinstance(backend, LocalBackend)
    assert isinstance(backend_from(Settings(backend="local").sandbox), LocalBackend)


def test_docker_without_an_engine_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    with pytest.raises(
        BackendUnavailable, match=r"No Docker daemon answers at tcp://127\.0\.0\.1:9"
    ):
        backend_from(Settings(), timeout=2)


@pytest.mark.container
@pytest.mark.parametrize("policy", ["full", "restricted"])
def test_docker_under_either_policy(policy: str) -> None:
    backend = backend_from(Settings(docker_policy=policy))
    assert isinstance(backend, DockerBackend)
    assert backend.restricted is (policy == "restricted")


def test_sandbox_check_runs_the_conformance_suite_on_the_configured_backend(tmp_path) -> None:
    from .cli_in_process import swe_green

    env = {"SWE_GREEN_BACKEND": "local", "SWE_GREEN_DATA_DIR": str(tmp_path)}
    done = swe_green("sandbox", "check", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kill_processes" in done.stdout and "unsupported" in done.stdout
    assert "failed" not in done.stdout
    wrong = swe_green("sandbox", "check", "--check", "nope", env=env)
    assert wrong.returncode == 2 and "No check named nope" in wrong.stderr + wrong.stdout
