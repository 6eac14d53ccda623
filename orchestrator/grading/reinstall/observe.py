"""What a reinstall changed, as :mod:`.guard` judges it: observed before the build in
its container, then from the host on that container stopped, then with git in a fresh
container from its files.

- **Before** (:func:`observe_before`, nothing of the patch has run yet): the files of the
  site-packages and bin directories, the repository's top-level modules, the engine's list
  of the container's changes, the bytes of the changed files outside the working tree, and
  the working tree as a git tree (a temporary index: the real one plus every file ``git add
  -A`` adds and the files the patch touched, even ignored ones), listed path by path with
  each file's object id, kept here on the host: the build can rewrite ``.git`` in its
  container, never this list.
- **Stopped** (:func:`observe_stopped`, no process of the build exists): the engine's new
  changes (read from the host: nothing inside the container can hide one) and the texts
  of the files the rules read (``RECORD``, ``entry_points.txt``, ``.pth``), read through
  the archive API.
- **Fresh** (:func:`repo_changes`): in a container started from the stopped one's files,
  with the system's ``git`` by its absolute path (the stopped observation refuses a build
  that replaced it), hooks and fsmonitor off: the working tree against that list (an index
  made from it; comparing needs no object of the repository); and the files outside the
  working tree that were changed before the build, whose later changes the engine's list
  cannot show, by their SHA-256 before and now (:func:`outside_changed`). Their hashing
  trusts the fresh container's ``sha256sum``: where the engine shows every change since the
  image (a grading container from an image), a replaced one is refused before; under the
  restricted Docker policy the set-up's own files were put in before the build, and a
  build that rewrites one of the system's tools among them could hide that file's change.
"""

from __future__ import annotations

import posixpath
import shlex

from pydantic import BaseModel, Field

from orchestrator.grading.reinstall.guard import SCRATCH, RepoChanges
from orchestrator.safe_git import GIT_SAFE_CONFIG
from orchestrator.sandbox import FileMissing, Sandbox, SandboxError
from orchestrator.sandbox.errors import Unsupported
from sandbox_tools.contract import ACTIVATE, REINSTALL_TMP

_GIT = shlex.join(["/usr/bin/git", *GIT_SAFE_CONFIG, "--literal-pathspecs"])
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_TOUCHED = f"{REINSTALL_TMP}-touched"
_LISTING = f"{REINSTALL_TMP}-listing"
_FOUND = f"{REINSTALL_TMP}-found"
_MAX_LIST = 500_000_000
_SYSTEM_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
_DIGEST_LIST, _DIGEST_OUT = f"{REINSTALL_TMP}-digest-list", f"{REINSTALL_TMP}-digests"
_DIGEST = (
    f"/usr/bin/xargs -0 -r -a {_DIGEST_LIST} /usr/bin/sha256sum -z -- > {_DIGEST_OUT} 2>/dev/null; "
    f"[ -e {_DIGEST_OUT} ]"
)
# the working tree after the patch: its files and their object ids (``ls-tree -r -z``)
_RECORD_TREE = (
    f'set -e; cd "$1"; export GIT_INDEX_FILE={REINSTALL_TMP}-tree\n'
    'cp .git/index "$GIT_INDEX_FILE" 2>/dev/null || rm -f "$GIT_INDEX_FILE"\n'
    f"{_GIT} add -A\n"
    f'while IFS= read -r -d \'\' p; do if [ -e "$p" ] || [ -L "$p" ]; then printf \'%s\\0\' "$p";'
    f" fi; done < {_TOUCHED} | xargs -0 -r {_GIT} add -f --\n"
    f'{_GIT} ls-tree -r -z --full-tree "$({_GIT} write-tree)" > {_LISTING}\n'
)
# the working tree against that listing: changed and untracked paths, NUL-separated
_COMPARE = (
    f'cd "$1" || exit 3; export GIT_INDEX_FILE={REINSTALL_TMP}-judge\n'
    f'rm -f "$GIT_INDEX_FILE"; {_GIT} update-index -z --index-info < {_LISTING} || exit 3\n'
    f"{_GIT} update-index -q --refresh >/dev/null 2>&1\n"
    f"{{ printf 'CHANGED\\0'; {_GIT} diff-files --name-only -z || exit 3\n"
    f"printf 'UNTRACKED\\0'; {_GIT} ls-files -z --others --exclude-standard || exit 3\n"
    f"}} > {_FOUND}\n"
)
# the site-packages and bin directories of the environment's Python and the system's
_DIRS_CODE = (
    "import site, sysconfig; p = sysconfig.get_paths(); "
    "print(*{p['purelib'], p['platlib'], p['scripts'], *site.getsitepackages()}, sep='\\n')"
)
_DIRS = (
    f"source {ACTIVATE} >/dev/null 2>&1; "
    'for py in python /usr/bin/python3; do "$py" -c "$1" 2>/dev/null; done | sort -u'
)


class Before(BaseModel):
    """The container before the build (see the module doc)."""

    repo_dir: str
    changes: set[str]  # the engine's changed paths over the image (empty: not supported)
    existed: set[str]  # files in site-packages and bin directories
    tools: set[str] = Field(default_factory=set)  # the names of the system's programs
    repo_modules: set[str]
    # the working tree after the patch (``ls-tree -r -z``); None: git could not record it
    listing: str | None
    digests: dict[str, str] = Field(default_factory=dict)  # changed files outside it


class Stopped(BaseModel):
    """What the stopped container shows changed since :class:`Before`."""

    paths: set[str]  # files (not their directories), outside the working tree too
    texts: dict[str, str] = Field(default_factory=dict)
    unreadable: set[str] = Field(default_factory=set)


def observe_before(sandbox: Sandbox, repo_dir: str, touched: list[str]) -> Before:
    """Observe the container before the build; ``touched``: the paths the patch changes."""
    dirs = sandbox.exec(["bash", "-c", _DIRS, "dirs", _DIRS_CODE], timeout=60).stdout.split()
    site_files = sandbox.exec(
        ["bash", "-c", f"find {' '.join(dirs) or '/nonexistent'} ! -type d -print 2>/dev/null; "
         "true"],
        timeout=120,
    )  # fmt: skip
    modules = sandbox.exec(
        ["bash", "-c", f"cd {repo_dir} && for d in . src lib; do ls -1 $d 2>/dev/null; done"],
        timeout=30,
    )
    tools = sandbox.exec(["bash", "-c", f"ls -1 {' '.join(_SYSTEM_DIRS)} 2>/dev/null; true"])
    sandbox.write_file(_TOUCHED, "".join(f"{path}\0" for path in touched))
    recorded = sandbox.exec(["bash", "-c", _RECORD_TREE, "tree", repo_dir], timeout=600)
    tree = _read_text(sandbox, _LISTING) if recorded.ok else None
    changes = engine_changes(sandbox)
    return Before(
        repo_dir=repo_dir,
        changes=changes,
        existed=set(site_files.stdout.splitlines()),
        tools={name for name in tools.stdout.splitlines() if name and not name.endswith(":")},
        repo_modules={
            name.removesuffix(".py")
            for name in modules.stdout.split()
            if name.isidentifier() or (name.endswith(".py") and name[:-3].isidentifier())
        },
        listing=tree,
        digests=digests(sandbox, _outside_tree(changes, repo_dir)),
    )


def engine_changes(sandbox: Sandbox) -> set[str]:
    """Paths the engine lists as changed over the image (read from the host: nothing inside
    the container can hide one); empty where the backend cannot tell."""
    try:
        return {str(change["Path"]) for change in sandbox.changes()}
    except (SandboxError, NotImplementedError, Unsupported):
        return set()


def observe_stopped(sandbox: Sandbox, before: Before) -> Stopped:
    """What the build changed, on its container stopped (host-side reads only)."""
    engine = engine_changes(sandbox) - before.changes
    parents = {posixpath.dirname(path) for path in engine}
    paths = {path for path in engine if path not in parents}  # files, not their directories
    return _with_texts(sandbox, paths)


def repo_changes(fresh: Sandbox, before: Before) -> RepoChanges | None:
    """The working tree in ``fresh`` against the listing recorded before the build (None: it
    cannot be compared)."""
    if before.listing is None:
        return None
    fresh.write_file(_LISTING, before.listing.encode("utf-8", "surrogateescape"))
    found = fresh.exec(
        ["/bin/bash", "-c", _COMPARE, "compare", before.repo_dir],
        timeout=600, env={"PATH": _PATH},
    )  # fmt: skip
    text = _read_text(fresh, _FOUND) if found.ok else None
    if text is None:
        return None
    sections: dict[str, set[str]] = {}
    current: set[str] = set()
    for item in text.split("\0"):
        if item in ("CHANGED", "UNTRACKED"):
            current = sections.setdefault(item, set())
        elif item:
            current.add(item)
    if len(sections) != 2:
        return None
    known = {entry.split("\t", 1)[1] for entry in before.listing.split("\0") if "\t" in entry}
    return RepoChanges(changed=sections["CHANGED"], untracked=sections["UNTRACKED"], known=known)


def drop_bytecode(fresh: Sandbox, paths: set[str]) -> None:
    """Remove the bytecode the build wrote (Python compiles the source again, in memory under
    ``PYTHONDONTWRITEBYTECODE``): a cache, but one that a build step could fill with
    unchecked-hash ``.pyc`` files loaded instead of unchanged sources."""
    pycs = sorted(p for p in paths if p.endswith((".pyc", ".pyo")))
    for start in range(0, len(pycs), 500):
        fresh.exec(["/bin/rm", "-f", "--", *pycs[start : start + 500]], timeout=120)


def in_tree(path: str, repo_dir: str) -> bool:
    """Whether ``path`` is in the working tree of ``repo_dir`` (its ``.git`` is not)."""
    git = repo_dir + "/.git"
    return path.startswith(repo_dir + "/") and path != git and not path.startswith(git + "/")


def _outside_tree(changes: set[str], repo_dir: str) -> list[str]:
    """The changed files whose later changes the engine's list cannot show (they are in the
    container's layer already) and git does not compare (nor the index and the objects,
    which the comparison does not read)."""
    parents = {posixpath.dirname(path) for path in changes}
    skipped = (f"{repo_dir}/.git/objects/", f"{repo_dir}/.git/index")
    return sorted(
        p for p in changes
        if p not in parents and not p.startswith((*SCRATCH, *skipped)) and not in_tree(p, repo_dir)
    )  # fmt: skip


def _read_text(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path, max_bytes=_MAX_LIST).decode("utf-8", "surrogateescape")
    except SandboxError:
        return None


def outside_changed(fresh: Sandbox, before: Before) -> Stopped:
    """The files outside the working tree that were changed before the build (the engine's
    list cannot show a later change) and whose bytes differ in ``fresh``, with the texts of
    those the rules read."""
    now = digests(fresh, sorted(before.digests), _PATH)
    paths = {p for p in set(before.digests) | set(now) if before.digests.get(p) != now.get(p)}
    return _with_texts(fresh, paths)


def _with_texts(sandbox: Sandbox, paths: set[str]) -> Stopped:
    """``paths`` with the texts the rules read (``RECORD``, ``entry_points.txt``, ``.pth``)."""
    found = Stopped(paths=paths)
    for path in sorted(paths):
        name = posixpath.basename(path)
        if name in ("RECORD", "entry_points.txt") or name.endswith(".pth"):
            try:
                data = sandbox.read_file(path, max_bytes=10_000_000)
            except FileMissing:
                continue  # deleted (an uninstall)
            except SandboxError:
                found.unreadable.add(path)  # a directory, a link, too large
                continue
            found.texts[path] = data.decode("utf-8", "replace")
    return found


def digests(sandbox: Sandbox, paths: list[str], search: str | None = None) -> dict[str, str]:
    """The SHA-256 of each of ``paths`` that is a file (one ``sha256sum`` in the sandbox,
    by its absolute path and the system's ``PATH`` unless ``search`` gives another)."""
    if not paths:
        return {}
    sandbox.write_file(_DIGEST_LIST, "".join(f"{path}\0" for path in paths).encode(
        "utf-8", "surrogateescape"
    ))  # fmt: skip
    sandbox.exec(
        ["/bin/bash", "-c", _DIGEST], timeout=600, env={"PATH": search} if search else None
    )
    text = _read_text(sandbox, _DIGEST_OUT) or ""
    found = {}
    for line in text.split("\0"):
        digest, _, path = line.partition("  ")
        if path:
            found[path] = digest
    return found
