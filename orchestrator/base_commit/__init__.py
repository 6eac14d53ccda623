"""Phase 4: the base commit. :func:`prepare_base_commit` checks out ``base_commit`` in a
container of the environment, reinstalls the project if the base needs it, and leaves ``.git``
holding only what the base reaches (:mod:`orchestrator.repos.clean_history`: no later commit,
tag or object of the mirror; :mod:`.scripts`: the bash that swaps it in)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.atomic import append_text
from orchestrator.base_commit.scripts import base_commit_script
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.plan.bytecode import refresh_instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.recipes.recipe import reinstall_needed
from orchestrator.repos.clean_history import is_ancestor, put_clean_history
from orchestrator.repos.git_commands import GitError
from orchestrator.repos.repo_cache import changed_paths, ensure_mirror
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.scripts import run_script
from orchestrator.settings import Settings


def prepare_base_commit(
    settings: Settings, instance: Instance, sandbox: Sandbox, log_path: Path,
    reinstall: str | None, shared_history: str | None = None,
) -> None:  # fmt: skip
    """Phase 4 in ``sandbox``: the base commit, reinstalled if needed, with a clean history.
    Raises :class:`~orchestrator.sandbox.scripts.ScriptFailed`.

    ``shared_history``: the commit whose history the environment's ``.git`` holds (see
    :func:`orchestrator.environments.env_image.share_history`); a base that descends from it
    gets only the objects beyond it.
    """
    mirror = ensure_mirror(settings, instance.repo, [instance.base_commit])
    if shared_history is None:
        mode, since = "swap", None
    elif is_ancestor(mirror, shared_history, instance.base_commit):
        mode, since = "add", shared_history
    else:
        mode, since = "replace", None
    history = put_clean_history(sandbox, mirror, instance.base_commit, since)
    beyond = f" beyond the shared history at {since[:12]}" if since else ""
    append_text(
        log_path,
        f"clean history ({mode}): {history.commits} commits, {history.objects} objects"
        f"{beyond}, {history.tags} tags, {history.pack_bytes / 1e6:.1f} MB pack, "
        f"{history.seconds:.1f}s\n",
    )
    script = base_commit_script(instance, reinstall, mode)
    timeout = settings.environment.install_timeout
    run_script(sandbox, script, log_path, timeout, name="base-commit")
    if settings.environment.compile_bytecode:
        refresh_instance(sandbox, log_path, timeout)


def reinstall_at_base(
    settings: Settings, instance: Instance, plan: EnvPlan, found: str | None, log_path: Path
) -> str | None:
    """The commands that install the project again at the base commit, if it needs them
    (``found``: what the LLM setup agent installed with)."""
    if instance.base_commit == instance.environment_setup_commit:
        return None
    if plan.recipe is None:
        return found
    changed = _changed_since_setup(settings, instance)
    if changed is not None and not reinstall_needed(plan.recipe.install, changed):
        append_text(
            log_path,
            f"no reinstall at the base commit: {len(changed)} changed file(s), "
            "no build input among them, and the install is editable\n",
        )
        return None
    return "\n".join([*plan.recipe.pre_install, plan.recipe.install])


def _changed_since_setup(settings: Settings, instance: Instance) -> list[str] | None:
    """The paths that differ between the environment's commit and the base (None: unknown)."""
    try:
        mirror = ensure_mirror(
            settings, instance.repo, [instance.environment_setup_commit, instance.base_commit]
        )
        return changed_paths(mirror, instance.environment_setup_commit, instance.base_commit)
    except (UserError, GitError):
        return None
