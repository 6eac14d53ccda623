"""Phase 4's history hygiene: the fresh ``.git`` of a base commit holding only what it reaches
(:func:`export_clean_git`, on the host; :func:`put_clean_history` puts it in a sandbox), and
the history that an environment's instances share (:func:`shared_commit`)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from orchestrator.repos.git_commands import (
    GIT_ENV,
    GitError,
    RepoError,
    git,
    has_commit,
    one_line,
)
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import CLEAN_GIT  # where a fresh .git waits for the swap


class CleanHistory(BaseModel):
    """What :func:`export_clean_git` put in the fresh repository."""

    commits: int
    objects: int
    tags: int
    pack_bytes: int
    seconds: float


def export_clean_git(
    mirror: Path, commit: str, dest: Path, *, since: str | None = None
) -> CleanHistory:
    """A fresh ``.git`` directory at ``dest`` holding only what ``commit`` reaches.

    ``since``: an ancestor of ``commit`` whose own history (:func:`export_clean_git` of it)
    is there already (the environment image's shared history): the pack then holds only
    the objects that ``commit`` and its tags reach beyond ``since`` and its tags; the refs
    are still all of ``commit``'s.

    History hygiene by construction rather than by pruning: a new repository receives one
    pack of the objects reachable from ``commit`` and from the tags it contains (their
    annotated tag objects included), ``refs/heads/main`` at ``commit`` and those tags.
    Nothing of the mirror is carried over: no other pack, no promisor or keep file, no
    alternates, reflog, stash, remote, hook or ``FETCH_HEAD``. It works whatever the mirror
    is (full, bare, partial with ``.promisor`` packs, on which ``git gc --prune`` keeps every
    object). Objects the mirror lacks (a partial clone's missing blobs in old history) are
    left out rather than fetched.
    """
    try:
        return _export_clean_git(mirror, commit, dest, since)
    except GitError as exc:
        raise RepoError(
            f"Cannot export the history of {commit} from {mirror}: {one_line(exc.stderr)}",
            "check the mirror (git fsck --connectivity-only) or remove it to clone it again.",
        ) from exc


def put_clean_history(
    sandbox: Sandbox, mirror: Path, commit: str, since: str | None = None
) -> CleanHistory:
    """:func:`export_clean_git` of ``commit`` put at ``CLEAN_GIT`` in ``sandbox``."""
    with tempfile.TemporaryDirectory() as tmp:
        history = export_clean_git(mirror, commit, Path(tmp) / "git", since=since)
        sandbox.put_dir(Path(tmp) / "git", CLEAN_GIT)
    return history


def _export_clean_git(mirror: Path, commit: str, dest: Path, since: str | None) -> CleanHistory:
    started = time.monotonic()
    if dest.exists() and any(dest.iterdir()):
        raise RepoError(f"Directory {dest} is not empty.", "remove it or pick another.")
    dest.mkdir(parents=True, exist_ok=True)
    git(["init", "--quiet", "--bare", "--template=", "--initial-branch=main", str(dest)])
    git(["config", "core.bare", "false"], dest)
    git(["config", "core.logAllRefUpdates", "false"], dest)  # no reflog, ever
    commit = git(["rev-parse", f"{commit}^{{commit}}"], mirror).strip()
    # (tag object or commit, ref, commit it peels to: empty for a lightweight tag)
    tags = [
        line.split(" ")
        for line in git(
            ["for-each-ref", f"--merged={commit}",
             "--format=%(objectname) %(refname) %(*objectname)", "refs/tags"],
            mirror,
        ).splitlines()
        if line
    ]  # fmt: skip
    tips = "\n".join([commit, *(sha for sha, _, _ in tags)]) + "\n"
    if since is not None:  # what the shared history holds already: its commit and tags
        tips += "".join(f"^{sha}\n" for sha in [since, *_tags_merged_into(mirror, since)])
    listed = subprocess.run(
        ["git", "rev-list", "--objects", "--missing=allow-any", "--stdin"],
        cwd=mirror, input=tips, env=os.environ | GIT_ENV, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        raise GitError(["rev-list", "--objects", commit], listed.stderr)
    # deltas computed afresh, not the mirror's reused as fetched: with the same objects
    # (and as many deltas) sympy's shared history took 77 MB, afresh 46 MB for 12 s more,
    # once per repository (the footprint)
    packed = subprocess.run(
        ["git", "pack-objects", "--quiet", "--missing=allow-any", "--delta-base-offset",
         "--no-reuse-delta", str(dest / "objects" / "pack" / "pack")],
        cwd=mirror, input=listed.stdout, env=os.environ | GIT_ENV, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if packed.returncode != 0:
        raise GitError(["pack-objects", commit], packed.stderr)
    # the refs as `git pack-refs` writes them (written here: with ``since`` the pack alone
    # does not hold the objects they name)
    (dest / "packed-refs").write_text(_packed_refs([(commit, "refs/heads/main", ""), *tags]))
    lines = listed.stdout.splitlines()
    counted = [commit, *([f"^{since}"] if since else [])]
    return CleanHistory(
        commits=int(git(["rev-list", "--count", *counted], mirror).strip()),
        objects=len(lines),
        tags=len(tags),
        pack_bytes=sum(p.stat().st_size for p in (dest / "objects" / "pack").iterdir()),
        seconds=round(time.monotonic() - started, 3),
    )


def _packed_refs(refs: list[list[str] | tuple[str, str, str]]) -> str:
    """A ``packed-refs`` file (fully peeled, sorted) of (object, ref, peeled commit) rows."""
    lines = ["# pack-refs with: peeled fully-peeled sorted "]
    for sha, ref, peeled in sorted(refs, key=lambda row: row[1].encode()):
        lines.append(f"{sha} {ref}")
        if peeled:
            lines.append(f"^{peeled}")
    return "\n".join(lines) + "\n"


def _tags_merged_into(mirror: Path, commit: str) -> list[str]:
    listed = git(
        ["for-each-ref", f"--merged={commit}", "--format=%(objectname)", "refs/tags"], mirror
    )
    return listed.split()


def shared_commit(mirror: Path, commits: Iterable[str]) -> str | None:
    """The newest commit that every one of ``commits`` descends from (their octopus merge
    base), among those the mirror holds; None when they share none."""
    present = [c for c in dict.fromkeys(commits) if has_commit(mirror, c)]
    if not present:
        return None
    if len(present) == 1:
        return git(["rev-parse", f"{present[0]}^{{commit}}"], mirror).strip()
    try:
        found = git(["merge-base", "--octopus", *present], mirror).split()
    except GitError:
        return None
    return found[0] if found else None


def is_ancestor(mirror: Path, ancestor: str, commit: str) -> bool:
    """Whether ``commit`` descends from ``ancestor`` (or is it)."""
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", ancestor, commit],
        cwd=mirror, env=os.environ | GIT_ENV, capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0
