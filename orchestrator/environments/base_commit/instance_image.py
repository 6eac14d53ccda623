"""Phase 4: the instance image (the repository at ``base_commit``, reinstalled if needed,
its history cut after the base), built from the environment image: from this host's cache,
the shared registry, or built."""

from __future__ import annotations

from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.environments.checkout.clean_history import is_ancestor, put_clean_history
from orchestrator.environments.checkout.git_commands import GitError
from orchestrator.environments.checkout.repo_cache import changed_paths, ensure_mirror
from orchestrator.environments.setup.build_steps import (
    building,
    cached,
    image_lock,
    keep_failed,
    run_logged,
)
from orchestrator.environments.setup.bytecode import refresh_instance
from orchestrator.environments.setup.image_registry import pull_shared, push_shared
from orchestrator.environments.setup.plan import EnvPlan, SetupFailed, instance_image_name
from orchestrator.environments.setup.setup_scripts import base_commit_script
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.sandbox import Sandbox, Snapshot
from orchestrator.sandbox.models import LABEL_ENV_KEY, LABEL_KIND
from orchestrator.spec.recipes import reinstall_needed


def ensure_instance_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, env: Snapshot, log_path: Path,
    reinstall: str | None, shared_history: str | None = None,
) -> tuple[Snapshot, bool]:  # fmt: skip
    """The instance image (phase 4): from this host's cache, else from the shared registry,
    else built from the environment (``env``: what the backend kept of phases 1-3) and
    kept by the backend (then pushed, where the image store pushes)."""
    name = instance_image_name(ctx, instance, plan)
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
            check_out_base(ctx, instance, sandbox, log_path, reinstall, shared_history)
            kept = ctx.backend.keep(
                sandbox, name, ctx.settings.storage.data_dir / "files",
                labels={LABEL_KIND: "instance", LABEL_ENV_KEY: plan.env_key},
            )  # fmt: skip
    if registry:
        push_shared(ctx.backend, registry, name, log_path, what=what)
    return kept, False


def check_out_base(
    ctx: RunContext, instance: Instance, sandbox: Sandbox, log_path: Path,
    reinstall: str | None, shared_history: str | None = None,
) -> None:  # fmt: skip
    """Phase 4 in ``sandbox``: the base commit, reinstalled if needed, with a clean history.

    ``shared_history``: the commit whose history the environment's ``.git`` holds (see
    :func:`share_history`); a base that descends from it gets only the objects beyond it.
    """
    mirror = ensure_mirror(ctx.settings, instance.repo, [instance.base_commit])
    if shared_history is None:
        mode, since = "swap", None
    elif is_ancestor(mirror, shared_history, instance.base_commit):
        mode, since = "add", shared_history
    else:
        mode, since = "replace", None
    history = put_clean_history(sandbox, mirror, instance.base_commit, since)
    with open(log_path, "a") as fh:
        beyond = f" beyond the shared history at {since[:12]}" if since else ""
        fh.write(
            f"clean history ({mode}): {history.commits} commits, {history.objects} objects"
            f"{beyond}, {history.tags} tags, {history.pack_bytes / 1e6:.1f} MB pack, "
            f"{history.seconds:.1f}s\n"
        )
    script = base_commit_script(instance, reinstall, mode)
    ok, why = run_logged(
        sandbox, script, log_path, "base-commit", ctx.settings.environment.install_timeout
    )
    if not ok:
        raise SetupFailed(f"base commit: {why}", keep_failed(ctx, sandbox))
    if ctx.settings.environment.compile_bytecode:
        refresh_instance(sandbox, log_path, ctx.settings.environment.install_timeout)


def changed_between_setup_and_base(ctx: RunContext, instance: Instance) -> list[str] | None:
    """The paths that differ between the environment's commit and the base (None: unknown)."""
    try:
        mirror = ensure_mirror(
            ctx.settings, instance.repo, [instance.environment_setup_commit, instance.base_commit]
        )
        return changed_paths(mirror, instance.environment_setup_commit, instance.base_commit)
    except (UserError, GitError):
        return None


def reinstall_at_base(
    ctx: RunContext, instance: Instance, plan: EnvPlan, found: str | None, log_path: Path
) -> str | None:
    """The commands that install the project again at the base commit, if it needs them
    (``found``: what the LLM setup agent installed with)."""
    if instance.base_commit == instance.environment_setup_commit:
        return None
    if plan.recipe is None:
        return found
    changed = changed_between_setup_and_base(ctx, instance)
    if changed is not None and not reinstall_needed(plan.recipe.install, changed):
        with open(log_path, "a") as fh:
            fh.write(
                f"no reinstall at the base commit: {len(changed)} changed file(s), "
                "no build input among them, and the install is editable\n"
            )
        return None
    return "\n".join([*plan.recipe.pre_install, plan.recipe.install])
