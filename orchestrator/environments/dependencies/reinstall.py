"""Reinstalling after a patch that changes what the build reads (a new dependency).

SWE-bench's harness runs the recipe's install command again after applying the model's
patch. Doing it for every patch costs a reinstall per grading; doing it never fails a gold
patch that adds a dependency (``pylint-dev__pylint-4661`` adds ``appdirs`` in ``setup.cfg``).
So: only when the patch changes a build input (:func:`recipes.touches_build_inputs`), or
for any change when the install is not editable (django 1.11 and 2.2's ``python setup.py
install`` copies the sources into site-packages, where the tests import them from:
without the reinstall the patch does not reach the tests), before the test patch is in
the container, with the package index reachable for the install and no other host
(:mod:`.reinstall_egress`). The install runs the patch's build code, as the
official harness does; leftover processes of it are stopped before the tests.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterator

from pydantic import BaseModel, Field

from orchestrator.environments.dependencies.reinstall_egress import NoEgress, index_only_network
from orchestrator.environments.dependencies.reinstall_guard import (
    SCRATCH,
    Written,
    reinstall_problems,
)
from orchestrator.patches.diff import split_patch
from orchestrator.sandbox import Sandbox, SandboxError
from orchestrator.sandbox.errors import Unsupported
from orchestrator.spec.recipes import (
    Recipe,
    copies_sources,
    reinstall_needed,
    touches_build_inputs,
)

ACTIVATE = "/opt/swe/activate.sh"


def patch_paths(patch: str) -> list[str]:
    """The files a unified diff changes (new and old names)."""
    return sorted({path for part in split_patch(patch)[1] for path in part.paths if path})


def changes_build_inputs(patch: str) -> bool:
    """Whether ``patch`` changes a file the build reads (packaging files, C/Cython sources,
    requirements)."""
    return touches_build_inputs(patch_paths(patch))


def needs_reinstall(recipe: Recipe, patch: str) -> bool:
    """Whether the install must run again after ``patch``: it changes a build input, or the
    install copied the sources (not editable), so any change must be installed again."""
    return reinstall_needed(recipe.install, patch_paths(patch))


# stop what the install left running: every process that was not there before it
_STOP_NEW = (
    "[ -f /tmp/.swe-pids-before ] && for pid in $(ps -eo pid=); do "
    'grep -qx "$pid" /tmp/.swe-pids-before || [ "$pid" = $$ ] || kill -9 "$pid" 2>/dev/null; '
    "done; rm -f /tmp/.swe-pids-before"
)


def reinstall_after_patch(
    sandbox: Sandbox, recipe: Recipe, patch: str, timeout: float
) -> tuple[bool, str] | None:
    """Run the install again if ``patch`` needs it (:func:`needs_reinstall`); None when not
    needed, else (succeeded, the output's last lines). The network is off again afterwards."""
    done = guarded_reinstall(sandbox, recipe, patch, timeout, guard=False)
    return None if done is None else (done.ok, done.tail)


class Reinstalled(BaseModel):
    """A reinstall: whether it succeeded, its output's last lines, and what it wrote that it
    may not (:func:`.reinstall_guard.reinstall_problems`)."""

    ok: bool
    tail: str = ""
    refused: list[str] = Field(default_factory=list)


@contextlib.contextmanager
def _install_network(sandbox: Sandbox) -> Iterator[tuple[dict[str, str], str]]:
    """The install's environment and network: the package index only
    (:func:`.reinstall_egress.index_only_network`), else none at all."""
    try:
        with index_only_network(sandbox) as env:
            yield env, "the package index only"
    except NoEgress as exc:
        sandbox.set_network(False)
        yield {}, f"none, {exc}"


def guarded_reinstall(
    sandbox: Sandbox,
    recipe: Recipe,
    patch: str,
    timeout: float,
    *,
    guard: bool = True,
    repo_dir: str = "/testbed",
    runner_files: list[str] | None = None,
) -> Reinstalled | None:
    """:func:`reinstall_after_patch`, and with ``guard`` the files it wrote are judged:
    anything beyond the package's own build output and metadata is listed in ``refused``."""
    if not needs_reinstall(recipe, patch):
        return None
    before: _Before | None = None
    with _install_network(sandbox) as (env, network):
        try:
            sandbox.exec(
                ["bash", "-c", "ps -eo pid= | tr -d ' ' > /tmp/.swe-pids-before"], timeout=30
            )
            if guard:
                before = _before(sandbox, repo_dir)
            result = sandbox.exec(
                ["bash", "-c", f"source {ACTIVATE} && {recipe.install}"], timeout=timeout, env=env
            )
        finally:
            sandbox.exec(["bash", "-c", _STOP_NEW], timeout=30)
            sandbox.set_network(False)
    tail = "\n".join([f"(network: {network})", *result.output.strip().splitlines()[-5:]])
    refused = []
    if before is not None:
        written = _written(sandbox, before, copies_sources(recipe.install))
        _drop_bytecode(sandbox, written)
        refused = reinstall_problems(written, repo_dir, runner_files or [])
    return Reinstalled(ok=result.ok, tail=tail, refused=refused)


_MARK = "/tmp/.swe-reinstall-mark"
# the site-packages and bin directories of the environment's Python and the system's
_DIRS_CODE = (
    "import site, sysconfig; p = sysconfig.get_paths(); "
    "print(*{p['purelib'], p['platlib'], p['scripts'], *site.getsitepackages()}, sep='\\n')"
)
_DIRS = (
    f"source {ACTIVATE} >/dev/null 2>&1; "
    'for py in python /usr/bin/python3; do "$py" -c "$1" 2>/dev/null; done | sort -u'
)
_PRUNE = " -o ".join(f"-path {p.rstrip('/')}" for p in SCRATCH if p.endswith("/"))


class _Before(BaseModel):
    changes: set[str]  # the engine's changed paths over the image (empty: not supported)
    existed: set[str]  # files in site-packages and bin directories
    repo_modules: set[str]


def _before(sandbox: Sandbox, repo_dir: str) -> _Before:
    dirs = sandbox.exec(["bash", "-c", _DIRS, "dirs", _DIRS_CODE], timeout=60).stdout.split()
    listing = sandbox.exec(
        ["bash", "-c", f"touch {_MARK} && find {' '.join(dirs) or '/nonexistent'} ! -type d "
         "-print 2>/dev/null; true"],
        timeout=120,
    )  # fmt: skip
    modules = sandbox.exec(
        ["bash", "-c", f"cd {repo_dir} && for d in . src lib; do ls -1 $d 2>/dev/null; done"],
        timeout=30,
    )
    return _Before(
        changes=_engine_changes(sandbox),
        existed=set(listing.stdout.splitlines()),
        repo_modules={
            name.removesuffix(".py")
            for name in modules.stdout.split()
            if name.isidentifier() or (name.endswith(".py") and name[:-3].isidentifier())
        },
    )


def _engine_changes(sandbox: Sandbox) -> set[str]:
    """Paths the engine lists as changed over the image (read from the host: nothing inside
    the container can hide one); empty where the backend cannot tell."""
    try:
        return {str(change["Path"]) for change in sandbox.changes()}
    except (SandboxError, NotImplementedError, Unsupported):
        return set()


def _drop_bytecode(sandbox: Sandbox, written: Written) -> None:
    """Remove the bytecode the reinstall wrote (Python compiles the source again, in memory
    under ``PYTHONDONTWRITEBYTECODE``): a cache, but one that a build step could fill with
    unchecked-hash ``.pyc`` files loaded instead of unchanged sources."""
    pycs = [p for p in written.changed if p.endswith((".pyc", ".pyo"))]
    for start in range(0, len(pycs), 500):
        sandbox.exec(["rm", "-f", "--", *pycs[start : start + 500]], timeout=120)
    written.changed = [p for p in written.changed if not p.endswith((".pyc", ".pyo"))]


def _written(sandbox: Sandbox, before: _Before, copies: bool) -> Written:
    """The files changed since :func:`_before`: the engine's new changes and every file whose
    inode changed (ctime) since the mark, and the texts the rules read."""
    found = sandbox.exec(
        ["bash", "-c", f"find / -xdev \\( {_PRUNE} \\) -prune -o ! -type d -cnewer {_MARK} "
         "-print 2>/dev/null; true"],
        timeout=300,
    )  # fmt: skip
    changed = set(found.stdout.splitlines())
    engine = _engine_changes(sandbox) - before.changes
    parents = {posixpath.dirname(path) for path in engine}
    changed |= {path for path in engine if path not in parents}  # files, not their directories
    texts: dict[str, str] = {}
    for path in sorted(changed):
        name = posixpath.basename(path)
        if name in ("RECORD", "entry_points.txt") or name.endswith(".pth"):
            try:
                texts[path] = sandbox.read_file(path)[:1_000_000].decode("utf-8", "replace")
            except SandboxError:
                continue
    return Written(changed, texts, before.existed, before.repo_modules, copies)
