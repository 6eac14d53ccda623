"""The instance image (phase 4's outcome: the repository at ``base_commit``, reinstalled if
needed, its history cut after the base), built from the environment image: from this host's
cache, the shared registry, or built by :func:`orchestrator.base_commit.prepare_base_commit`."""

from __future__ import annotations

from pathlib import Path

from orchestrator.base_commit import prepare_base_commit
from orchestrator.context.run_context import RunContext
from orchestrator.environments.build_steps import building, cached, image_lock
from orchestrator.environments.image_registry import pull_shared, push_shared
from orchestrator.image_names import instance_image_name
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.sandbox import Snapshot
from orchestrator.sandbox.models import LABEL_ENV_KEY, LABEL_KIND


def ensure_instance_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, env: Snapshot, log_path: Path,
    reinstall: str | None, shared_history: str | None = None,
) -> tuple[Snapshot, bool]:  # fmt: skip
    """The instance image (phase 4): from this host's cache, else from the shared registry,
    else built from the environment (``env``: what the backend kept of phases 1-3) and
    kept by the backend (then pushed, where the image store pushes)."""
    name = instance_image_name(
        ctx.settings.environment.image_prefix, instance.instance_id, plan.instance_key(instance)
    )
    settings = ctx.settings.environment
    registry = settings.env_image_registry if settings.registry_instance_images else None
    what = "instance image"
    with image_lock(ctx, f"instance-{plan.instance_key(instance)}"):
        if cached(ctx, name):
            return Snapshot.of_image(name), True
        pulled = pull_shared(ctx.backend, registry, name, log_path, what) if registry else None
        if pulled:
            return Snapshot(name=name, image=pulled), True
        sandbox = ctx.start_sandbox(env, instance, "setup", network=True)
        with building(ctx, sandbox, "base commit"):
            prepare_base_commit(
                ctx.settings, instance, sandbox, log_path, reinstall, shared_history
            )
            kept = ctx.backend.keep(
                sandbox, name, ctx.settings.storage.data_dir / "files",
                labels={LABEL_KIND: "instance", LABEL_ENV_KEY: plan.env_key},
            )  # fmt: skip
    if registry:
        push_shared(ctx.backend, registry, name, log_path, what=what)
    return kept, False
