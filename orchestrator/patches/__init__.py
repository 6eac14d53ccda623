"""Phase 6: the patch. :func:`take_patch` takes the participant's patch from its answer
(:mod:`.extract`) or, when it sent none, from its container (:mod:`.container_diff`), and
drops the hidden test files from it; the patch is read once into the unified-diff model
(:class:`.diff.Patch`), which phase 7 receives; grading applies it safely (:mod:`.apply`, with
the path checks of :mod:`.safety`)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.diffs.diff import Patch
from orchestrator.models import Instance
from orchestrator.patches.container_diff import container_diff
from orchestrator.sandbox import Sandbox


class TakenPatch(BaseModel):
    """The patch graded, and the hidden test files dropped from it."""

    model_config = ConfigDict(frozen=True)

    patch: Patch
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
    kept, dropped = Patch.parse(patch).without(set(hidden))
    return TakenPatch(patch=kept, dropped=dropped)
