"""Which failed environment builds are remembered (env_failure_ttl)."""

from __future__ import annotations

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.environments.failed_builds import failed_build, remember_failed_build
from orchestrator.models import Instance
from orchestrator.sandbox.local import LocalBackend
from orchestrator.settings import Settings

INSTANCE = Instance(
    instance_id="demo__calc-1", repo="demo/calc", base_commit="a" * 40,
    environment_setup_commit="b" * 40,
)  # fmt: skip
DNS_FAILURE = (
    "setup failed (installing pip, setuptools and wheel): after connection broken by "
    "'NewConnectionError(... [Errno -3] Temporary failure in name resolution')': /simple/wheel/"
)


def _ctx(tmp_path, **settings) -> RunContext:
    return RunContext(
        Settings(data_dir=tmp_path / "data", **settings), LocalBackend(), "run-1",
        RunDir(tmp_path / "run"),
    )  # fmt: skip


def test_a_failed_recipe_is_remembered_and_named(tmp_path):
    ctx = _ctx(tmp_path)
    remember_failed_build(ctx, "key1", INSTANCE, "setup failed: No matching distribution for x")
    message = failed_build(ctx, "key1")
    assert message is not None
    assert "No matching distribution for x" in message and "demo__calc-1" in message
    assert "SWE_GREEN_ENV_FAILURE_TTL=0" in message


def test_a_build_that_failed_for_a_network_outage_is_not_remembered(tmp_path):
    """A DNS failure during a brief outage must not fail the environment for 12 hours."""
    ctx = _ctx(tmp_path)
    remember_failed_build(ctx, "key1", INSTANCE, DNS_FAILURE)
    assert failed_build(ctx, "key1") is None


def test_nothing_is_remembered_with_a_ttl_of_zero(tmp_path):
    ctx = _ctx(tmp_path, env_failure_ttl=0)
    remember_failed_build(ctx, "key1", INSTANCE, "setup failed: broken recipe")
    assert failed_build(ctx, "key1") is None


def test_a_build_the_runs_interruption_killed_is_not_remembered(tmp_path):
    """An interrupted run removes its containers: the build in flight ends killed (exit 137),
    which says nothing of the environment."""
    ctx = _ctx(tmp_path)
    ctx.cancelled.set()
    remember_failed_build(ctx, "key1", INSTANCE, "setup failed (exit 137): >>>>> python: 3.9")
    assert failed_build(ctx, "key1") is None
    ctx.cancelled.clear()
    remember_failed_build(ctx, "key1", INSTANCE, "setup failed (exit 137): >>>>> python: 3.9")
    assert failed_build(ctx, "key1") is not None
