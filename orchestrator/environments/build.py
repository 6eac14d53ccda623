"""Phases 1-4: checkout, environment setup, dependencies, base commit and history hygiene.

The outcome of phases 1-3 is an *environment image* keyed by (repo, environment_setup_commit,
recipe or agent); the outcome of phase 4 is an *instance image* (the repository at
``base_commit``, its history cut after the base). Both are cached: a later instance or run
with the same key starts from the image. Two instances needing the same missing image at once
build it once (a host file lock per key).

Contract of every environment (recipe or LLM): ``/testbed`` holds the repository and
sourcing ``/opt/swe/activate.sh`` in bash activates its Python environment and cd's there.
"""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.environments.base_commit.instance_image import (
    check_out_base,
    ensure_instance_image,
    reinstall_at_base,
)
from orchestrator.environments.checkout.repo_cache import check_complete
from orchestrator.environments.prepared import PreparedInstance
from orchestrator.environments.setup.build_steps import building
from orchestrator.environments.setup.env_image import (
    EnvImage,
    ensure_env_image,
    env_from_labels,
    setup_environment,
)
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
from orchestrator.sandbox import Snapshot


def prepare_instance(ctx: RunContext, instance: Instance) -> PreparedInstance:
    """Phases 1-4 for one instance, from the caches where possible; what the instance's
    containers start from is what the backend kept (:meth:`SandboxBackend.keep`).

    The one place the backend's kind decides the way: a backend that keeps no images (the
    restricted Docker policy) runs phases 1-4 in one set-up sandbox
    (:func:`_prepare_in_one_sandbox`)."""
    if not ctx.backend.commits:
        return _prepare_in_one_sandbox(ctx, instance)
    log_path = ctx.instance_dir(instance) / "setup.log"
    timings: dict[str, float] = {}
    started = time.monotonic()
    plan = plan_environment(ctx, instance)
    if not ctx.backend.images.exists(instance_image_name(ctx, instance, plan)):
        try:
            check_complete(ctx.settings, instance)
        except UserError as exc:
            raise SetupFailed(f"checkout: {exc}") from exc
    env = ensure_env_image(ctx, instance, plan, log_path)
    timings["setup"] = time.monotonic() - started
    started = time.monotonic()
    reinstall = reinstall_at_base(ctx, instance, plan, env.reinstall, log_path)
    instance_image, inst_hit = ensure_instance_image(
        ctx, instance, plan, env.name, log_path, reinstall, env.shared_history
    )
    timings["base_commit"] = time.monotonic() - started
    return PreparedInstance(
        plan=plan,
        env_image=env.name,
        snapshot=Snapshot.of_image(instance_image),
        env_cache_hit=env.cache_hit,
        instance_cache_hit=inst_hit,
        test_cmd=env.test_cmd,
        setup_tokens=env.tokens,
        timings=timings,
        python_used=env.python,
    )


def _prepare_in_one_sandbox(ctx: RunContext, instance: Instance) -> PreparedInstance:
    """Phases 1-4 in one set-up sandbox with the network on, for a backend that keeps no
    images (the restricted Docker policy, Amber's gateway: no commit): no image cache, the
    set-up runs for every instance (phases 2-3 only when the shared registry lacks the
    environment image). What the backend keeps of it (a host file pack) is what the
    validation, participant and grading containers (created without a network) start from."""
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
        files = ctx.backend.keep(
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
        snapshot=files,
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
