"""Phase 6: the patch. :func:`take_patch` takes the participant's patch from its answer
(:mod:`.extract`) or, when it sent none, from its container (:mod:`.container_diff`), and
drops the hidden test files from it; one unified-diff model serves every step
(:mod:`orchestrator.diffs.diff`); grading applies it safely (:mod:`orchestrator.diffs.apply`,
with the path checks of :mod:`orchestrator.diffs.safety`). What phase 6
does to the participant's container (its processes stopped before the diff, its reset when
grading goes on in it) is :mod:`.participant_container`."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from orchestrator.diffs.diff import drop_files
from orchestrator.models import Instance
from orchestrator.patches.container_diff import container_diff
from orchestrator.sandbox import Sandbox


class TakenPatch(BaseModel):
    """The patch graded, and the hidden test files dropped from it."""

    patch: str
    dropped: list[str] = Field(default_factory=list)


def take_patch(
    instance: Instance, answered: str | None, container: Sandbox | None, hidden: Iterable[str]
) -> TakenPatch:
    """Phase 6: ``answered`` (the patch of the answer, or of a predictions file), else the
    diff of ``container``'s repository against the base (untracked files included), with the
    files of the instance's hidden tests (``hidden``) dropped. Raises
    :class:`~.container_diff.ContainerDiffError` when the container's repository cannot be
    diffed."""
    patch = answered or ""
    if not patch and container is not None:
        patch = container_diff(container, instance.base_commit)
    kept, dropped = drop_files(patch, set(hidden))
    return TakenPatch(patch=kept, dropped=dropped)
