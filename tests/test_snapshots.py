"""Snapshots belong to the backend: what ``keep`` returns is what ``start`` takes, and the
images live behind their own store (unit tests; the conformance suite runs them on Docker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.sandbox import ImageStore, SandboxBackend, SandboxSpec, Snapshot, Unsupported
from orchestrator.sandbox.docker.images import DockerImages
from orchestrator.sandbox.local import LOCAL_IMAGE, LocalBackend


def test_an_image_as_a_snapshot_holds_nothing_on_the_host(tmp_path: Path) -> None:
    kept = Snapshot.of_image("p/instance:x-1")
    assert (kept.name, kept.image, kept.archive) == ("p/instance:x-1", "p/instance:x-1", None)
    kept.discard()  # an image has a life of its own: nothing to delete
    pack = tmp_path / "files.tar"
    pack.write_bytes(b"tar")
    files = Snapshot(name="p/instance:x-1", image="p/env:y", archive=pack, size=3)
    files.discard()
    assert not pack.exists()
    files.discard()  # twice is fine


def test_the_local_backend_starts_from_its_image_as_a_snapshot_and_keeps_none(
    tmp_path: Path,
) -> None:
    backend: SandboxBackend = LocalBackend()
    spec = SandboxSpec(run_id="snapshots")
    sandbox = backend.start(Snapshot.of_image(LOCAL_IMAGE), spec)
    try:
        assert sandbox.exec("echo ok").stdout.strip() == "ok"
        with pytest.raises(Unsupported):
            backend.keep(sandbox, "p/instance:x-1", tmp_path)
    finally:
        sandbox.remove()
    files = Snapshot(name="x", image=LOCAL_IMAGE, archive=tmp_path / "files.tar")
    with pytest.raises(Unsupported):
        backend.start(files, spec)


def test_the_restricted_store_refuses_what_the_gateway_refuses_before_asking_the_engine() -> None:
    store: ImageStore = DockerImages(client=None, restricted=True)  # type: ignore[arg-type]
    refused = [
        lambda: store.find(),
        lambda: store.tag("a:b", "c", "d"),
        lambda: store.push("a:b", "127.0.0.1:9/a:b"),
        lambda: store.import_tarball(Path("x.tar"), "a", "b", []),
        lambda: list(store.build(Path("."), "a:b", {}, {})),
    ]
    for call in refused:
        with pytest.raises(Unsupported, match="restricted Docker policy"):
            call()
