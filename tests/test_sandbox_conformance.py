"""The conformance suite (:mod:`orchestrator.sandbox.conformance`) against every backend:
the local one always, Docker and Docker under the restricted policy with the container tests.
A check may find a capability unsupported only where the backend documents it."""

from __future__ import annotations

import pytest

from orchestrator.sandbox.conformance import CHECKS, Target, run_checks
from orchestrator.sandbox.local import LOCAL_IMAGE, LocalBackend

from .conftest import BASE_IMAGE, TEST_RUN_ID

# what the local backend cannot do (the host has no images, network switch or disk budget)
LOCAL_UNSUPPORTED = {
    "network",
    "snapshot_and_images",
    "import_image",
    "build_image",
    "registry",
    "disk",
}
# what Amber's Docker gateway refuses (commits, image listing, tags, pushes, imports, builds)
RESTRICTED_UNSUPPORTED = {"snapshot_and_images", "import_image", "build_image", "registry"}
BACKENDS = [
    "local",
    pytest.param("docker", marks=pytest.mark.container),
    pytest.param("docker-restricted", marks=pytest.mark.container),
]


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "local":
        return Target(LocalBackend(), LOCAL_IMAGE, TEST_RUN_ID)
    from orchestrator.sandbox.docker import DockerBackend

    docker_backend = request.getfixturevalue("docker_backend")
    request.getfixturevalue("base_image")
    restricted = request.param == "docker-restricted"
    return Target(
        DockerBackend(docker_backend.client, restricted=restricted),
        BASE_IMAGE,
        TEST_RUN_ID,
        image_repository=f"swe-green-test-{TEST_RUN_ID}/conformance",
    )


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_backend_conforms(target: Target, name: str, request: pytest.FixtureRequest) -> None:
    if name == "registry" and target.backend.name == "docker":
        target.registry = request.getfixturevalue("image_registry")
    (result,) = run_checks(target, [name])
    if target.backend.name == "local":
        unsupported = LOCAL_UNSUPPORTED
    else:  # Docker: everything under the full policy
        unsupported = set() if target.backend.commits else RESTRICTED_UNSUPPORTED
    expected = "unsupported" if name in unsupported else "passed"
    assert result.outcome == expected, result.message


def test_a_failing_backend_fails_the_suite() -> None:
    """The suite can fail: a backend whose sandboxes forget what is written."""

    class Forgetful(LocalBackend):
        def start(self, image, spec):  # type: ignore[no-untyped-def]
            sandbox = super().start(image, spec)
            sandbox.read_file = lambda path, max_bytes=None: b"forgotten"  # type: ignore[method-assign]
            return sandbox

    results = {r.name: r for r in run_checks(Target(Forgetful(), LOCAL_IMAGE, TEST_RUN_ID))}
    assert results["files"].outcome == "failed" and "bytes changed" in results["files"].message
    assert results["exec"].outcome == "passed"


@pytest.mark.parametrize("filters", [True, False], ids=["extraction-filter", "by-hand"])
def test_unpacking_refuses_members_outside_the_directory(tmp_path, monkeypatch, filters):
    """With Python's extraction filters (3.11.4+) or, before them, the same check by hand."""
    import io
    import tarfile

    from orchestrator.sandbox.archives import unpack

    if not filters:
        monkeypatch.delattr(tarfile, "tar_filter", raising=False)

    def archive(name: str) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            member = tarfile.TarInfo(name)
            member.size = 2
            tar.addfile(member, io.BytesIO(b"ok"))
        return buf.getvalue()

    unpack(archive("repo/x.py"), str(tmp_path))
    assert (tmp_path / "repo" / "x.py").read_bytes() == b"ok"
    for bad in (archive("../evil.py"), archive("a/../../evil.py")):
        with pytest.raises(tarfile.TarError):
            unpack(bad, str(tmp_path / "inner"))
    assert not (tmp_path.parent / "evil.py").exists()
