"""Finding this tool's containers and images by label."""

from __future__ import annotations

from collections.abc import Collection

from orchestrator.errors import UserError
from orchestrator.sandbox import ContainerInfo, ImageInfo, SandboxBackend
from orchestrator.sandbox.models import LABEL_INSTANCE, LABEL_KIND, LABEL_RUN, LABEL_TOOL

STOPPED = ("exited", "dead")  # kept; "created" may be one about to start
RUNNING = ("running", "paused", "restarting")


class NotYours(UserError):
    """Only other users' runs have a container of the instance asked for."""


def list_containers(
    backend: SandboxBackend, run_id: str | None = None, instance_id: str | None = None
) -> list[ContainerInfo]:
    """This tool's containers (running or not), newest first."""
    labels = {LABEL_RUN: run_id or "", LABEL_INSTANCE: instance_id or ""}
    return backend.containers({k: v for k, v in labels.items() if v})


def find_container(
    backend: SandboxBackend,
    ref: str,
    run_id: str | None = None,
    *,
    own_runs: Collection[str] | None = None,
) -> tuple[ContainerInfo, str]:
    """The container for an instance id, a container name or an id (of run ``run_id`` when
    given); and how it was found. Of an instance's containers, a stopped kept participant
    container comes before running ones and before grading containers, newest first.

    ``own_runs``: the caller's runs; by instance id (no ``run_id``), only their containers
    are candidates (another user's container is opened only when named, or its run is)."""
    by_instance = list_containers(backend, run_id=run_id, instance_id=ref)
    if run_id is None and own_runs is not None and by_instance:
        others = [info for info in by_instance if info.run_id not in own_runs]
        by_instance = [info for info in by_instance if info.run_id in own_runs]
        if not by_instance:
            # other users' containers are not named here: only a run named by its user opens one
            raise NotYours(
                f"No container of your runs is labelled with instance {ref}; "
                f"{len(others)} container(s) of other users' runs are.",
                "to open one of another user's containers, name its run: --run RUN.",
            )
    if by_instance:
        ranked = sorted(by_instance, key=_inspect_rank)  # stable: newest first within a rank
        of_run = f" of run {run_id}" if run_id else ""
        how = f"the best of {len(by_instance)} container(s){of_run} labelled with instance {ref}"
        return ranked[0], how
    for info in list_containers(backend, run_id=run_id):
        if ref in (info.name, info.id) or (len(ref) >= 6 and info.id.startswith(ref)):
            return info, f"container name or id {ref}"
    of_run = f" in run {run_id}" if run_id else ""
    raise UserError(
        f"No container of swe-green matches {ref!r}{of_run}.",
        "`swe-green sandbox ls` lists them; containers are kept only for failed instances "
        "unless keep_containers=always.",
    )


def _inspect_rank(info: ContainerInfo) -> tuple[int, int]:
    running = info.status in ("running", "paused", "restarting")
    return (int(running), int(info.role != "participant"))


def list_images(backend: SandboxBackend, kinds: tuple[str, ...] | None = None) -> list[ImageInfo]:
    images = backend.images.find(labels={LABEL_TOOL: "1"})
    if kinds is None:
        return images
    return [img for img in images if img.labels.get(LABEL_KIND) in kinds]
