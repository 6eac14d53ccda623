"""Conformance checks of the optional capabilities: the network switch, snapshots and image
listing, image import and build, and a registry's push and pull. A backend without one says
:class:`.errors.Unsupported`, consistently."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from orchestrator.sandbox.conformance.harness import (
    ConformanceFailure,
    Target,
    check,
    expect,
    expect_raises,
    scratch,
    started,
    tar_of,
)
from orchestrator.sandbox.errors import ImageMissing, SandboxError, Unsupported
from orchestrator.sandbox.models import SandboxSpec


@check
def check_network(target: Target) -> None:
    """Off leaves loopback only; on brings an interface back (files kept, scratch space such
    as ``/tmp`` aside: a backend may carry the files into a new container)."""
    interfaces = "ls /sys/class/net"
    with started(target) as sandbox:
        where = "/opt/conformance"
        sandbox.write_file(f"{where}/kept", b"kept")
        sandbox.set_network(False)
        got = sandbox.exec(interfaces, timeout=30).stdout.split()
        expect(got == ["lo"], f"network off leaves {got}")
        sandbox.set_network(True)
        expect(len(sandbox.exec(interfaces, timeout=30).stdout.split()) > 1, "network not on")
        expect(sandbox.read_file(f"{where}/kept") == b"kept", "switching lost a file")
    with started(target, network=False) as sandbox:
        got = sandbox.exec(interfaces, timeout=30).stdout.split()
        expect(got == ["lo"], f"a sandbox started without network has {got}")


@check
def check_snapshot_and_images(target: Target) -> None:
    """A snapshot keeps the files; the image is listed, labelled, tagged and removed."""
    backend, repository = target.backend, target.image_repository
    tag = uuid.uuid4().hex[:8]
    with started(target) as sandbox:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/kept.txt", b"kept")
        image = sandbox.snapshot(repository, tag, labels={"swe-green.conformance": tag})
    name, alias = f"{repository}:{tag}", f"{repository}:{tag}-alias"
    try:
        expect(backend.images.exists(name), "the snapshot's image does not exist")
        expect(backend.images.labels(name).get("swe-green.conformance") == tag, "labels lost")
        listed = backend.images.find(labels={"swe-green.conformance": tag})
        expect([i.id for i in listed] == [image], f"images(labels) lists {listed}")
        backend.images.tag(name, repository, f"{tag}-alias")
        expect(backend.images.exists(alias), "tag_image made no tag")
        expect(backend.images.remove(alias), "removing a second tag failed")
        expect(backend.images.exists(name), "removing a second tag removed the image")
        clone_spec = SandboxSpec(run_id=target.run_id, instance_id="conformance", role="clone")
        clone = backend.start(name, clone_spec)
        try:
            expect(clone.read_file(f"{where}/kept.txt") == b"kept", "the snapshot lost a file")
            in_use = backend.images.remove(image)  # by id, as gc removes them
            expect(not in_use and backend.images.exists(name), "an image in use was removed")
        finally:
            clone.remove()
    finally:
        backend.images.remove(alias)
        expect(backend.images.remove(name), "an unused image could not be removed")
    expect(not backend.images.exists(name), "remove_image left the image")
    expect(backend.images.remove(name), "removing a gone image is not fine")
    spec = SandboxSpec(run_id=target.run_id)
    expect_raises(ImageMissing, lambda: backend.start(name, spec), "starting from a missing image")


@check
def check_import_image(target: Target) -> None:
    """An image from a root file system tarball."""
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        tar_path = Path(tmp) / "rootfs.tar"
        tar_path.write_bytes(tar_of({"etc/conformance": tag.encode()}))
        target.backend.images.import_tarball(
            tar_path, target.image_repository, f"import-{tag}", ["LABEL swe-green.kind=check"]
        )
    name = f"{target.image_repository}:import-{tag}"
    try:
        expect(target.backend.images.exists(name), "import_image made no image")
        expect(target.backend.images.labels(name).get("swe-green.kind") == "check", "no label")
    finally:
        target.backend.images.remove(name)


@check
def check_build_image(target: Target) -> None:
    """An image built from a Dockerfile, labelled; a failing build is a SandboxError."""
    tag = uuid.uuid4().hex[:8]
    name = f"{target.image_repository}:build-{tag}"
    images = target.backend.images
    with tempfile.TemporaryDirectory() as tmp:
        dockerfile = Path(tmp) / "Dockerfile"
        dockerfile.write_text(f"FROM {target.image}\nARG WHAT\nLABEL swe-green.what=$WHAT\n")
        try:
            lines = list(images.build(Path(tmp), name, {"WHAT": tag}, {"swe-green.kind": "check"}))
            expect(any(line.strip() for line in lines), "the build yielded no log line")
            expect(images.exists(name), "build made no image")
            labels = images.labels(name)
            expect(labels.get("swe-green.kind") == "check", f"build's labels lost: {labels}")
            expect(labels.get("swe-green.what") == tag, "the build argument was not passed")
        finally:
            images.remove(name)
        dockerfile.write_text(f"FROM {target.image}\nRUN exit 3\n")
        failing = f"{name}-failing"
        try:
            expect_raises(SandboxError, lambda: list(images.build(Path(tmp), failing, {}, {})),
                          "a failing build")  # fmt: skip
        finally:
            images.remove(failing)


@check
def check_registry(target: Target) -> None:
    """An image goes to a registry (tagged for the upload only) and comes back."""
    backend, repository = target.backend, target.image_repository
    tag = uuid.uuid4().hex[:8]
    with started(target) as sandbox:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/shared.txt", b"shared")
        try:
            image = sandbox.snapshot(repository, tag)
        except Unsupported:
            backend.images.push(f"{repository}:{tag}", f"127.0.0.1:9/x:{tag}")  # must say so too
            raise ConformanceFailure("push_image works where snapshot is unsupported") from None
    if target.registry is None:
        backend.images.remove(image)
        raise Unsupported("no registry given to check push and pull against")
    reference = f"{target.registry}/{repository}:{tag}"
    try:
        backend.images.push(f"{repository}:{tag}", reference)
        expect(not backend.images.exists(reference), "push_image left its upload tag")
        expect(backend.images.remove(image), "the pushed image could not be removed")
        backend.images.pull(reference)
        clone = backend.start(reference, SandboxSpec(run_id=target.run_id, role="pulled"))
        try:
            expect(clone.read_file(f"{where}/shared.txt") == b"shared", "the pull lost a file")
        finally:
            clone.remove()
        missing = f"{reference}-missing"
        expect_raises(SandboxError, lambda: backend.images.pull(missing), "pulling a missing one")
    finally:
        backend.images.remove(reference)
        backend.images.remove(image)
