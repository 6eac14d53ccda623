"""``swe-green envs prune``: which cached environment and instance images to remove (least
recently used first, never those of a run in progress), and removing them."""

from __future__ import annotations

import glob
import re
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.housekeeping.active import ActiveRun, active_runs
from orchestrator.housekeeping.image_use import last_use
from orchestrator.image_names import is_cache_image, is_env_image
from orchestrator.log import get_logger
from orchestrator.sandbox import ContainerInfo, SandboxBackend
from orchestrator.sandbox.models import LABEL_ENV_KEY, LABEL_INSTANCE, LABEL_KIND, LABEL_RUN, epoch


@dataclass
class CachedImage:
    id: str
    tag: str
    kind: str  # env or instance
    size: int  # bytes of its own layers (not those of its parent image)
    last_used: float  # epoch seconds: the last container start recorded, else its creation
    parent: str
    labels: dict[str, str]
    protected: str = ""  # why it must stay, when it must
    tags: tuple[str, ...] = ()  # all its tags under the prefix


@dataclass
class PrunePlan:
    remove: list[CachedImage]
    keep: list[CachedImage]
    containers: list[str]  # stopped containers of finished runs using a removed image

    @property
    def kept_size(self) -> int:
        return sum(image.size for image in self.keep)


def cached_images(backend: SandboxBackend, data_dir: Path, prefix: str) -> list[CachedImage]:
    """The environment and instance images under ``prefix``, least recently used first.

    An environment image counts as used whenever one of its instance images is."""
    everything = {image.id: image for image in backend.images.find()}
    # a pulled instance image has no parent link: its environment by key, if here
    env_by_key = {
        image.labels.get(LABEL_ENV_KEY): image.id
        for image in everything.values()
        if (image.labels or {}).get(LABEL_KIND) == "env"
        and any(is_env_image(prefix, t) for t in image.tags)
    }
    found: list[CachedImage] = []
    for image in everything.values():
        tags = [t for t in image.tags if is_cache_image(prefix, t)]
        labels = image.labels or {}
        if not tags or labels.get(LABEL_KIND) not in ("env", "instance"):
            continue
        parent_id = image.parent
        if not parent_id and labels.get(LABEL_KIND) == "instance":
            parent_id = env_by_key.get(labels.get(LABEL_ENV_KEY), "")
        parent = everything.get(parent_id)
        size = image.size - (parent.size if parent else 0)
        uses = [u for u in (last_use(data_dir, tag) for tag in tags) if u is not None]
        found.append(
            CachedImage(
                id=image.id,
                tag=tags[0],
                kind=labels[LABEL_KIND],
                size=max(size, 0),
                last_used=max(uses) if uses else epoch(image.created),
                parent=parent_id,
                labels=dict(labels),
                tags=tuple(tags),
            )  # fmt: skip
        )
    by_id = {image.id: image for image in found}
    for cached in found:
        if cached.kind == "instance" and cached.parent in by_id:
            env = by_id[cached.parent]
            env.last_used = max(env.last_used, cached.last_used)
    return sorted(found, key=lambda i: (i.last_used, i.kind == "env", i.tag))


def plan_prune(
    backend: SandboxBackend,
    data_dir: Path,
    prefix: str,
    *,
    keep_days: float | None = None,
    max_size: int | None = None,
    now: float | None = None,
) -> PrunePlan:
    """Which cached images to remove: those unused for ``keep_days``, then the least recently
    used until the rest fit ``max_size`` bytes (everything when neither is given), never
    those of a run in progress."""
    now = time.time() if now is None else now
    images = cached_images(backend, data_dir, prefix)
    active = active_runs(backend, data_dir)
    containers = backend.all_containers()
    _protect_in_progress(images, containers, active)
    candidates = [image for image in images if not image.protected]
    chosen = _choose(images, candidates, keep_days=keep_days, max_size=max_size, now=now)
    # removing an environment image frees nothing while instance images build on it, nor a
    # shared layer (tools, history) while environment images do: up the chain, to a fixpoint
    chosen_ids = {image.id for image in chosen}
    kept_parents = {image.parent for image in images if image.id not in chosen_ids}
    while kept_parents & chosen_ids:
        chosen_ids -= kept_parents
        kept_parents = {image.parent for image in images if image.id not in chosen_ids}
    remove = [image for image in images if image.id in chosen_ids]
    users = [
        container.name for container in containers
        if container.image_id in chosen_ids
    ]  # fmt: skip
    keep = [image for image in images if image.id not in chosen_ids]
    return PrunePlan(remove=remove, keep=keep, containers=users)


def _protect_in_progress(
    images: list[CachedImage], containers: list[ContainerInfo], active: dict[str, ActiveRun]
) -> None:
    """Mark (``protected``) the images a run in progress uses (its containers started from
    them: its lease names them), built, or may still use (its instances'), and the
    environments of those instance images."""
    by_id = {image.id: image for image in images}
    for container in containers:
        run_id = container.labels.get(LABEL_RUN, "")
        image_id = container.image_id
        if image_id in by_id and (run_id in active or container.status == "running"):
            by_id[image_id].protected = f"used by a container of run {run_id or '?'} in progress"
    for image in images:
        for run in active.values():
            if image.labels.get(LABEL_RUN) == run.run_id:
                image.protected = f"built by run {run.run_id} in progress"
            elif image.labels.get(LABEL_INSTANCE) in run.instances and image.kind == "instance":
                image.protected = f"an instance of run {run.run_id} in progress"
            elif run.images & {image.id, image.tag, *image.tags}:
                image.protected = f"used by run {run.run_id} in progress"
    for image in images:  # an environment stays with its protected instance images
        if image.protected and image.parent in by_id and not by_id[image.parent].protected:
            by_id[image.parent].protected = f"the environment of {image.tag}"


def _choose(
    images: list[CachedImage],
    candidates: list[CachedImage],
    *,
    keep_days: float | None,
    max_size: int | None,
    now: float,
) -> list[CachedImage]:
    """Of ``candidates`` (least recently used first): those unused for ``keep_days``, then
    more until all ``images`` left fit ``max_size``; all of them when neither is given."""
    if keep_days is None and max_size is None:
        return candidates
    chosen: list[CachedImage] = []
    if keep_days is not None:
        cutoff = now - keep_days * 86400
        chosen = [image for image in candidates if image.last_used < cutoff]
    if max_size is not None:
        total = sum(image.size for image in images) - sum(image.size for image in chosen)
        for image in candidates:
            if total <= max_size:
                break
            if image not in chosen:
                chosen.append(image)
                total -= image.size
    return chosen


def execute_prune(backend: SandboxBackend, data_dir: Path, plan: PrunePlan) -> list[str]:
    """Remove what ``plan`` says (containers first, instance images before their
    environments); returns the tags removed. The validation outcomes of removed instance
    images go too, whatever way their tests ran (:func:`validation_records`). An image that
    became busy meanwhile stays."""
    for name in plan.containers:
        backend.remove_container(name)
    removed = []
    for image in sorted(plan.remove, key=lambda i: i.kind == "env"):
        if backend.images.remove(image.id):
            removed.append(image.tag)
        else:
            get_logger().warning("prune.busy", image=image.tag)
        if image.kind == "instance":
            for tag in image.tags or (image.tag,):
                for record in validation_records(data_dir, tag.rsplit(":", 1)[-1]):
                    record.unlink(missing_ok=True)
    return removed


# a validation outcome of an instance image tagged ``tag`` is ``<tag><suffix>.json``, the
# suffix naming how its tests ran (orchestrator.validation.validation): ``-r<runs>``,
# ``-uw<n>``, ``-tw<n>``, in that order, each optional
_RECORD_SUFFIX = r"(?:-r\d+)?(?:-uw\d+)?(?:-tw\d+)?\.json"


def validation_records(data_dir: Path, tag: str) -> list[Path]:
    """The validation outcomes recorded for the instance image tagged ``tag``, whatever the
    way its tests ran; never those of another tag that starts with ``tag``."""
    record = re.compile(re.escape(tag) + _RECORD_SUFFIX)
    directory = Path(data_dir) / "validation"
    return sorted(
        path for path in directory.glob(f"{glob.escape(tag)}*.json")
        if record.fullmatch(path.name)
    )  # fmt: skip
