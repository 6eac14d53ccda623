"""The Docker engine's images (the :class:`.protocol.ImageStore` of the Docker backend):
listed and inspected, tagged, removed, pulled and pushed, imported and built."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import docker
from docker.errors import APIError, ImageNotFound, NotFound
from docker.models.images import Image
from docker.utils import parse_repository_tag

from orchestrator.sandbox.docker.runtime import _ENGINE_ERRORS
from orchestrator.sandbox.errors import SandboxError, Unsupported
from orchestrator.sandbox.models import ImageInfo

if TYPE_CHECKING:
    from orchestrator.sandbox.protocol import ImageStore


class DockerImages:
    """The images of one Docker engine.

    ``restricted``: within Amber's Docker gateway, which allows pulls and inspecting one
    image only: listing, tags, pushes, imports and builds say :class:`Unsupported`, so
    a pulled image keeps its registry reference and nothing is shared from such a host.
    """

    def __init__(self, client: docker.DockerClient, *, restricted: bool = False) -> None:
        self.client = client
        self.restricted = restricted

    def _refused(self, what: str) -> None:
        if self.restricted:
            raise Unsupported(f"the restricted Docker policy allows no {what}")

    def find(
        self, labels: Mapping[str, str] | None = None, reference: str | None = None
    ) -> list[ImageInfo]:
        self._refused("image listing")
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]} if labels else None
        for attempt in range(5):
            try:
                found = self.client.images.list(name=reference, filters=filters)
            except ImageNotFound:
                # removed between the listing and its inspection (another user's prune, say)
                if attempt == 4:
                    raise SandboxError("the images kept changing while they were listed") from None
                continue
            except _ENGINE_ERRORS as exc:
                raise SandboxError(f"the Docker engine refused to list images ({exc})") from exc
            return [_image_info(image) for image in found]
        raise AssertionError("unreachable")

    def exists(self, name: str) -> bool:
        try:
            self.client.images.get(name)
        except ImageNotFound:
            return False
        except _ENGINE_ERRORS as exc:
            raise SandboxError(str(exc)) from exc
        return True

    def labels(self, name: str) -> dict[str, str]:
        return dict(self.client.images.get(name).labels or {})

    def tag(self, name: str, repository: str, tag: str) -> None:
        self._refused("tags")
        self.client.images.get(name).tag(repository, tag)

    def remove(self, image_id: str) -> bool:
        try:
            self.client.images.remove(image_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:
                raise SandboxError(f"cannot remove image {image_id}: {exc}") from exc
            return False
        return True

    def pull(self, reference: str) -> None:
        repository, tag = parse_repository_tag(reference)
        try:
            self.client.images.pull(repository, tag=tag or "latest")
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot pull {reference}: {exc}") from exc

    def push(self, name: str, reference: str) -> None:
        self._refused("pushes")
        repository, tag = parse_repository_tag(reference)
        try:
            self.client.images.get(name).tag(repository, tag or "latest")
            try:
                for line in self.client.images.push(
                    repository, tag=tag or "latest", stream=True, decode=True
                ):
                    if "error" in line:
                        raise SandboxError(f"cannot push {reference}: {line['error'].strip()}")
            finally:
                # the registry's tag only: the image stays under ``name``
                self.client.api.remove_image(f"{repository}:{tag or 'latest'}", noprune=True)
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot push {reference}: {exc}") from exc

    def import_tarball(self, tar_path: Path, repository: str, tag: str, changes: list[str]) -> None:
        self._refused("imports")
        try:
            self.client.api.import_image_from_file(
                str(tar_path), repository=repository, tag=tag, changes=changes
            )
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"docker import of {repository}:{tag} failed: {exc}") from exc

    def build(
        self, context: Path, tag: str, buildargs: Mapping[str, str], labels: Mapping[str, str]
    ) -> Iterator[str]:
        self._refused("builds")
        try:
            for chunk in self.client.api.build(
                path=str(context), tag=tag, buildargs=dict(buildargs), rm=True, forcerm=True,
                decode=True, labels=dict(labels),
            ):  # fmt: skip
                if "error" in chunk:
                    raise SandboxError(chunk["error"].strip())
                yield chunk.get("stream", "")
        except _ENGINE_ERRORS as exc:
            raise SandboxError(str(exc)) from exc


def _image_info(image: Image) -> ImageInfo:
    return ImageInfo(
        id=image.id, short_id=image.short_id, tags=list(image.tags),
        labels=dict(image.labels or {}), size=image.attrs.get("Size", 0) or 0,
        parent=image.attrs.get("Parent", "") or "", created=image.attrs.get("Created", ""),
    )  # fmt: skip


# mypy checks that the class implements its Protocol (nothing to do at run time)
if TYPE_CHECKING:
    _store: type[ImageStore] = DockerImages
