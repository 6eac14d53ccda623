"""Phase 6 in the participant's container: what is done to it before its patch is taken or
graded there. Every process stopped before its diff is taken (:func:`take_from_container`;
a repository that cannot be diffed is :class:`NoPatch`), stopped at once when its answer
holds the patch (:func:`stop_quietly`), and reset to the base commit when grading goes on in
it (:func:`reset_to_base`)."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance
from orchestrator.patches import TakenPatch, take_patch
from orchestrator.patches.container_diff import ContainerDiffError
from orchestrator.plan.bytecode import drop_manifest_command
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import TESTBED


class NoPatch(Exception):
    """The participant's answer holds no patch and its repository cannot be diffed."""


def take_from_container(
    instance: Instance, answered: str | None, container: Sandbox, hidden: Iterable[str]
) -> TakenPatch:
    """Phase 6 when the patch may come from ``container``: every process of it stopped
    first, then :func:`~orchestrator.patches.take_patch`. Raises :class:`NoPatch` when
    the answer holds none and the repository cannot be diffed."""
    container.kill_processes()
    try:
        return take_patch(instance, answered, container, hidden)
    except ContainerDiffError as exc:
        # no process of the participant runs any more: its repository is broken
        raise NoPatch(
            f"no patch: the participant's answer holds none and its repository "
            f"cannot be diffed ({exc})"
        ) from exc


def reset_to_base(sandbox: Sandbox, instance: Instance) -> None:
    """The repository of ``sandbox`` back at the base commit, untracked files removed and the
    bytecode manifest dropped (the container is no longer the image's)."""
    sandbox.exec(
        f"{SHELL_GIT_FUNCTION}\ncd {TESTBED} && git reset -q --hard {instance.base_commit} "
        f"&& git clean -fdq && {drop_manifest_command()}",
        timeout=120,
    )


def stop_quietly(ctx: RunContext, sandbox: Sandbox) -> None:
    """Stop ``sandbox`` at once; a failure is logged (its disposal removes it anyway)."""
    try:
        sandbox.stop(0)
    except Exception as exc:  # noqa: BLE001 - cleanup must not hide the result
        ctx.log.warning("container.stop_failed", container=sandbox.name, error=str(exc))
