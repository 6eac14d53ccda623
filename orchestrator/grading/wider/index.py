"""The repository read for the wider scope (:mod:`.scope`), in a container at the base commit:
its Python files from ``git ls-files``, and the text of its test modules, packed there with
``tar`` and read in one copy."""

from __future__ import annotations

import io
import tarfile

from orchestrator.grading.wider.scope import RepoIndex, index_of, is_test_module
from orchestrator.safe_git import GIT
from orchestrator.sandbox import Sandbox, SandboxError
from sandbox_tools.contract import TESTBED

_PACK = "/tmp/swe-wider-tests.tar"
MAX_PACK_BYTES = 512 * 1024 * 1024


def read_index(sandbox: Sandbox) -> RepoIndex:
    """The :class:`~.scope.RepoIndex` of the repository in ``sandbox`` (as committed: the
    tracked files). Raises :class:`~orchestrator.sandbox.SandboxError` when git or tar
    fails."""
    listed = sandbox.exec([*GIT, "-C", TESTBED, "ls-files", "-z", "--", "*.py"], timeout=300)
    if not listed.ok:
        raise SandboxError(f"git ls-files failed: {listed.stderr.strip()[:300]}")
    files = [path for path in listed.stdout.split("\0") if path]
    return index_of(files, read_sources(sandbox, [p for p in files if is_test_module(p)]))


def read_sources(sandbox: Sandbox, paths: list[str]) -> dict[str, str]:
    """The text of the repository's files ``paths`` in ``sandbox`` (tracked or not; a path
    that is not a file there is missing from the answer), packed with ``tar`` and read in
    one copy. Raises :class:`~orchestrator.sandbox.SandboxError` when tar fails."""
    if not paths:
        return {}
    sandbox.write_file(_PACK + ".list", "\0".join(paths))
    packed = sandbox.exec(
        ["tar", "-cf", _PACK, "-C", TESTBED, "--ignore-failed-read", "--null",
         "-T", _PACK + ".list"], timeout=300,
    )  # fmt: skip
    if not packed.ok:
        raise SandboxError(f"tar of the files failed: {packed.stderr.strip()[:300]}")
    data = sandbox.read_file(_PACK, max_bytes=MAX_PACK_BYTES)
    sandbox.exec(["rm", "-f", _PACK, _PACK + ".list"], timeout=60)
    sources: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as pack:
        for member in pack.getmembers():
            handle = pack.extractfile(member) if member.isfile() else None
            if handle is not None:
                sources[member.name] = handle.read().decode("utf-8", "replace")
    return sources
