"""Phases 1-4 under the restricted Docker policy (Amber's gateway: no commit): the set-up in
one container per instance, its files kept on the host (:mod:`orchestrator.sandbox.file_snapshot`)
for the containers that follow."""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.environments.base_commit.instance_image import check_out_base, reinstall_at_base
from orchestrator.environments.checkout.repo_cache import check_complete
from orchestrator.environments.prepared import PreparedInstance
from orchestrator.environments.setup.build_steps import building
from orchestrator.environments.setup.env_image import EnvImage, env_from_labels, setup_environment
from orchestrator.environments.setup.failed_builds import failed_build
from orchestrator.environments.setup.image_registry import pull_shared
from orchestrator.environments.setup.plan import (
    EnvPlan,
    SetupFailed,
    env_image_name,
    instance_image_name,
    plan_environment,
)
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.sandbox.file_snapshot import capture


def prepare_without_commit(ctx: RunContext, instance: Instance) -> PreparedInstance:
    """Phases 1-4 in one container with the network on, for a Docker engine that refuses
    commits (Amber's gateway): no image cache, the set-up runs for every instance (phases
    2-3 only when the shared registry lacks the environment image). Its
    files become a :class:`FileSnapshot` that the validation, participant and grading
    containers (created without a network) start from."""
    log_path = ctx.instance_dir(instance) / "setup.log"
    timings: dict[str, float] = {}
    started = time.monotonic()
    plan = plan_environment(ctx, instance)
    try:
        check_complete(ctx.settings, instance)
    except UserError as exc:
        raise SetupFailed(f"checkout: {exc}") from exc
    built = _pulled_env_image(ctx, instance, plan, log_path)
    if built is None:
        remembered = failed_build(ctx, plan.env_key)
        if remembered is not None:
            raise SetupFailed(f"environment setup: {remembered}")
    start_from = built.name if built else plan.base_image
    sandbox = ctx.start_sandbox(start_from, instance, "setup", network=True)
    with building(ctx, sandbox, "environment setup"):
        if built is None:
            built = EnvImage(name="", cache_hit=False)
            setup_environment(ctx, instance, plan, sandbox, log_path, built)
        timings["setup"] = time.monotonic() - started
        started = time.monotonic()
        reinstall = reinstall_at_base(ctx, instance, plan, built.reinstall, log_path)
        check_out_base(ctx, instance, sandbox, log_path, reinstall, built.shared_history)
        files = capture(
            sandbox,
            instance_image_name(ctx, instance, plan),
            ctx.settings.storage.data_dir / "files",
        )
        with open(log_path, "a") as fh:
            fh.write(
                f"set-up files kept on the host (no commit under the restricted Docker policy): "
                f"{files.size / 1e6:.1f} MB, {len(files.deleted)} deleted path(s)\n"
            )
    timings["base_commit"] = time.monotonic() - started
    return PreparedInstance(
        plan=plan,
        env_image=built.name,
        instance_image=files,
        env_cache_hit=built.cache_hit,
        instance_cache_hit=False,
        test_cmd=built.test_cmd,
        setup_tokens=built.tokens,
        timings=timings,
        python_used=built.python,
    )


def _pulled_env_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path
) -> EnvImage | None:
    """The environment image from the shared registry (``env_image_registry``), pulled and
    used under its registry reference (the gateway refuses tags), or None: set up here.
    Never pushed: the gateway refuses commits and pushes (a host under the full policy
    fills the registry)."""
    registry = ctx.settings.environment.env_image_registry
    if not registry:
        return None
    name = env_image_name(ctx, instance, plan)
    pulled = pull_shared(ctx.backend, registry, name, log_path, keep_reference=True)
    return env_from_labels(ctx, pulled) if pulled else None
