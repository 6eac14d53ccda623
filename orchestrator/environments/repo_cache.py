"""Phase 1: host-side bare mirrors of the repositories, and checkouts exported from them.

One bare mirror per repository, ``<data_dir>/mirrors/owner__name.git``, cloned once (heads and
tags) and fetched again only when a needed commit is missing; a commit that no branch or tag
reaches is then fetched by id and kept under ``refs/swe-green/<sha>``. The source is
``settings.repos.mirror_dir / "owner__name.git"`` when ``mirror_dir`` is set, else
``settings.repos.repo_url_template`` (placeholders ``{repo}``, ``{owner}``, ``{name}``,
``{owner_name}``). A :class:`filelock.FileLock` per mirror serialises clone and fetch across
threads and processes; a clone goes to a temporary directory first, so a mirror that exists
is complete.

:func:`export_checkout` makes a self-contained (no hardlinks, no alternates) non-bare clone
of a mirror, with its whole history, checked out (detached) at a commit: the directory that
is copied into the container as ``/testbed`` of the environment image (never seen by a
participant). :func:`export_clean_git` makes the ``.git`` that replaces it in phase 4: only
what the base commit reaches.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from orchestrator.errors import UserError
from orchestrator.log import get_logger
from orchestrator.models import Instance
from orchestrator.safe_git import GIT
from orchestrator.settings import Settings

_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # a missing https repository must fail, not ask for a password
    "GIT_ASKPASS": "true",
    "LC_ALL": "C",
}
_TRANSIENT = re.compile(
    r"could not resolve host|connection (timed out|reset|refused)|early eof|rpc failed|"
    r"the remote end hung up|operation timed out|temporary failure",
    re.IGNORECASE,
)


class RepoError(UserError):
    """A repository or commit cannot be obtained."""


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's stderr."""

    def __init__(self, args: list[str], stderr: str) -> None:
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)}: {_one_line(self.stderr)}")


def mirror_path(settings: Settings, repo: str) -> Path:
    """Where the bare mirror of ``repo`` (``owner/name``) lives."""
    return settings.storage.data_dir / "mirrors" / f"{_owner_name(repo)}.git"


def source_url(settings: Settings, repo: str) -> str:
    """The URL or local path the mirror of ``repo`` is cloned and fetched from."""
    owner_name = _owner_name(repo)
    if settings.repos.mirror_dir is not None:
        return str(Path(settings.repos.mirror_dir).expanduser().resolve() / f"{owner_name}.git")
    owner, name = repo.split("/", 1)
    try:
        return settings.repos.repo_url_template.format(
            repo=repo, owner=owner, name=name, owner_name=owner_name
        )
    except (KeyError, IndexError, ValueError) as exc:
        raise RepoError(
            f"Repository URL template {settings.repos.repo_url_template!r} is invalid ({exc!r}).",
            "use only the placeholders {repo}, {owner}, {name} and {owner_name}.",
        ) from None


def ensure_mirror(settings: Settings, repo: str, commits: Iterable[str] = ()) -> Path:
    """The mirror of ``repo``, cloned if absent and fetched if any of ``commits`` is missing."""
    mirror = mirror_path(settings, repo)
    wanted = [c for c in dict.fromkeys(commits) if c]
    if mirror.is_dir() and not _missing(mirror, wanted):
        return mirror
    mirror.parent.mkdir(parents=True, exist_ok=True)
    log = get_logger(repo=repo)
    with FileLock(str(mirror) + ".lock"):
        url = source_url(settings, repo)
        if not mirror.is_dir():
            log.info("mirror.clone", url=url, mirror=str(mirror))
            _clone_mirror(url, mirror, repo)
        missing = _missing(mirror, wanted)
        if missing:
            log.info("mirror.fetch", url=url, missing=missing)
            _fetch(mirror, url, missing, repo)
            missing = _missing(mirror, missing)
        if missing:
            raise RepoError(
                f"Commit(s) {', '.join(missing)} of {repo} are not in {url}, even after a fetch.",
                "check the dataset's commit ids, or point SWE_GREEN_MIRROR_DIR / "
                "SWE_GREEN_REPO_URL_TEMPLATE at a complete copy of the repository.",
            )
    return mirror


def export_checkout(mirror: Path, commit: str, dest: Path) -> None:
    """A self-contained clone of ``mirror`` at ``dest``, checked out (detached) at ``commit``."""
    if dest.exists() and any(dest.iterdir()):
        raise RepoError(f"Checkout directory {dest} is not empty.", "remove it or pick another.")
    try:
        _git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", str(mirror), str(dest)])
    except GitError as exc:
        raise RepoError(f"Cannot clone mirror {mirror}: {exc.stderr}", "check the mirror.") from exc
    try:
        _git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit], dest)
    except GitError as exc:
        raise RepoError(
            f"Cannot check out {commit} in {dest}: {_one_line(exc.stderr)}",
            "fetch the commit into the mirror first (ensure_mirror with that commit).",
        ) from exc


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
            f"Cannot export the history of {commit} from {mirror}: {_one_line(exc.stderr)}",
            "check the mirror (git fsck --connectivity-only) or remove it to clone it again.",
        ) from exc


def _export_clean_git(mirror: Path, commit: str, dest: Path, since: str | None) -> CleanHistory:
    started = time.monotonic()
    if dest.exists() and any(dest.iterdir()):
        raise RepoError(f"Directory {dest} is not empty.", "remove it or pick another.")
    dest.mkdir(parents=True, exist_ok=True)
    _git(["init", "--quiet", "--bare", "--template=", "--initial-branch=main", str(dest)])
    _git(["config", "core.bare", "false"], dest)
    _git(["config", "core.logAllRefUpdates", "false"], dest)  # no reflog, ever
    commit = _git(["rev-parse", f"{commit}^{{commit}}"], mirror).strip()
    # (tag object or commit, ref, commit it peels to: empty for a lightweight tag)
    tags = [
        line.split(" ")
        for line in _git(
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
        cwd=mirror, input=tips, env=os.environ | _GIT_ENV, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        raise GitError(["rev-list", "--objects", commit], listed.stderr)
    packed = subprocess.run(
        ["git", "pack-objects", "--quiet", "--missing=allow-any", "--delta-base-offset",
         str(dest / "objects" / "pack" / "pack")],
        cwd=mirror, input=listed.stdout, env=os.environ | _GIT_ENV, capture_output=True,
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
        commits=int(_git(["rev-list", "--count", *counted], mirror).strip()),
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
    listed = _git(
        ["for-each-ref", f"--merged={commit}", "--format=%(objectname)", "refs/tags"], mirror
    )
    return listed.split()


def shared_commit(mirror: Path, commits: Iterable[str]) -> str | None:
    """The newest commit that every one of ``commits`` descends from (their octopus merge
    base), among those the mirror holds; None when they share none."""
    present = [c for c in dict.fromkeys(commits) if _has_commit(mirror, c)]
    if not present:
        return None
    if len(present) == 1:
        return _git(["rev-parse", f"{present[0]}^{{commit}}"], mirror).strip()
    try:
        found = _git(["merge-base", "--octopus", *present], mirror).split()
    except GitError:
        return None
    return found[0] if found else None


def is_ancestor(mirror: Path, ancestor: str, commit: str) -> bool:
    """Whether ``commit`` descends from ``ancestor`` (or is it)."""
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", ancestor, commit],
        cwd=mirror, env=os.environ | _GIT_ENV, capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


def _has_commit(mirror: Path, commit: str) -> bool:
    done = subprocess.run(
        ["git", "cat-file", "-e", f"{commit}^{{commit}}"],
        cwd=mirror, env=os.environ | _GIT_ENV, capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


def prepare_checkout(settings: Settings, instance: Instance, dest: Path) -> Path:
    """Mirror the instance's repository and export it at ``environment_setup_commit``.

    The mirror is made to hold both the setup and the base commit, so phase 4 can move on.
    Submodules are checked out from their own mirrors, never from the network.
    """
    mirror = ensure_mirror(
        settings, instance.repo, [instance.environment_setup_commit, instance.base_commit]
    )
    export_checkout(mirror, instance.environment_setup_commit, dest)
    init_submodules(settings, dest)
    return dest


def missing_objects(mirror: Path, commit: str) -> list[str]:
    """``path (object)`` of every file of ``commit``'s tree that ``mirror`` lacks (a partial
    clone's snapshot may lack a few large blobs): such a commit cannot be checked out.
    ``rev-list --missing=print`` never fetches what is missing from a promisor remote."""
    listed = _git(["rev-list", "--objects", "--missing=print", f"{commit}^{{tree}}"], mirror)
    missing = [line[1:].strip() for line in listed.splitlines() if line.startswith("?")]
    if not missing:
        return []
    paths = {}
    for line in _git(["ls-tree", "-r", "--full-tree", commit], mirror).splitlines():
        meta, _, path = line.partition("\t")
        paths[meta.split()[2]] = path
    return [f"{paths.get(sha, '?')} ({sha})" for sha in missing]


def check_complete(settings: Settings, instance: Instance) -> None:
    """Fail early, naming the repository and the objects, when the mirror lacks a file of the
    setup or the base commit (rather than after building the environment)."""
    mirror = ensure_mirror(
        settings, instance.repo, [instance.environment_setup_commit, instance.base_commit]
    )
    for commit in dict.fromkeys([instance.environment_setup_commit, instance.base_commit]):
        missing = missing_objects(mirror, commit)
        if missing:
            shown = ", ".join(missing[:3]) + (
                f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            )
            raise RepoError(
                f"The mirror of {instance.repo} lacks {len(missing)} object(s) of commit "
                f"{commit[:12]}: {shown} (missing blob)",
                "mirror the full repository (git clone --mirror) where the internet is reachable.",
            )


def changed_paths(mirror: Path, old: str, new: str) -> list[str]:
    """The paths that differ between two commits of ``mirror``."""
    out = _git(["diff", "--name-only", "--no-renames", old, new, "--"], mirror)
    return [line for line in out.splitlines() if line]


def submodule_repo(url: str) -> str | None:
    """``owner/name`` of a submodule URL on a forge (``https://github.com/o/n.git``,
    ``git@github.com:o/n``, ``../n.git`` is not one: None)."""
    match = re.search(r"[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url.strip())
    if not match or url.startswith("."):
        return None
    return f"{match.group(1)}/{match.group(2)}"


def init_submodules(settings: Settings, checkout: Path) -> None:
    """Check out the submodules of ``checkout`` from mirrors of their repositories (fetched
    like any mirror: from ``mirror_dir`` or the URL template), at the commits the tree
    records."""
    if not (checkout / ".gitmodules").is_file():
        return
    try:
        urls = _git(
            ["config", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.url$"], checkout
        )
    except GitError:
        return  # no submodule declared
    for line in urls.splitlines():
        key, _, url = line.partition(" ")
        name = key.removeprefix("submodule.").removesuffix(".url")
        path = _git(["config", "-f", ".gitmodules", f"submodule.{name}.path"], checkout).strip()
        try:
            wanted = _git(["rev-parse", f"HEAD:{path}"], checkout).strip()
        except GitError:
            continue  # declared but not in this commit's tree
        repo = submodule_repo(url)
        if repo is None:
            raise RepoError(
                f"Submodule {name} has a URL swe-green cannot map to a mirror: {url}",
                "add the repository to SWE_GREEN_MIRROR_DIR as owner__name.git.",
            )
        sub_mirror = ensure_mirror(settings, repo, [wanted])
        _git(["config", f"submodule.{name}.url", str(sub_mirror)], checkout)
        try:
            _git(
                ["-c", "protocol.file.allow=always", "submodule", "update", "--init",
                 "--no-recommend-shallow", "--", path],
                checkout,
            )  # fmt: skip
        except GitError as exc:
            raise RepoError(
                f"Cannot check out submodule {path} ({repo}) at {wanted}: {_one_line(exc.stderr)}",
                "check the submodule's mirror.",
            ) from exc


def _owner_name(repo: str) -> str:
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise RepoError(f"Repository {repo!r} is not of the form owner/name.", "fix the dataset.")
    return repo.replace("/", "__")


def _missing(mirror: Path, commits: Iterable[str]) -> list[str]:
    missing = []
    for commit in commits:
        done = subprocess.run(
            [*GIT, "cat-file", "-e", f"{commit}^{{commit}}"],
            cwd=mirror,
            env=os.environ | _GIT_ENV,
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            missing.append(commit)
    return missing


def _clone_mirror(url: str, mirror: Path, repo: str) -> None:
    partial = mirror.with_name(f".{mirror.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)  # left over by an interrupted clone
    try:
        _git_retrying(["clone", "--bare", "--quiet", "--", url, str(partial)])
        _git(["config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*"], partial)
    except GitError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise RepoError(
            f"Cannot clone {repo} from {url}: {_one_line(exc.stderr)}",
            "check the URL (SWE_GREEN_REPO_URL_TEMPLATE or SWE_GREEN_MIRROR_DIR) and the network.",
        ) from exc
    partial.rename(mirror)


def _fetch(mirror: Path, url: str, commits: list[str], repo: str) -> None:
    try:
        _git_retrying(
            ["fetch", "--quiet", "--prune", "--tags", "--force", "--", url]
            + ["+refs/heads/*:refs/heads/*"],
            mirror,
        )
    except GitError as exc:
        raise RepoError(
            f"Cannot fetch {repo} from {url}: {_one_line(exc.stderr)}",
            "check the URL (SWE_GREEN_REPO_URL_TEMPLATE or SWE_GREEN_MIRROR_DIR) and the network.",
        ) from exc
    for commit in _missing(mirror, commits):
        if re.fullmatch(r"[0-9a-f]{40}", commit):
            # not on any branch or tag: ask for it by id (GitHub serves any commit id)
            try:
                _git(["fetch", "--quiet", "--", url, f"{commit}:refs/swe-green/{commit}"], mirror)
            except GitError:
                pass  # reported by the caller as a missing commit


def _git_retrying(args: list[str], cwd: Path | None = None) -> str:
    retrying = retry(
        retry=retry_if_exception(
            lambda e: isinstance(e, GitError) and bool(_TRANSIENT.search(e.stderr))
        ),
        stop=stop_after_attempt(3),
        wait=wait_exponential(multiplier=2, max=20),
        reraise=True,
    )
    return retrying(_git)(args, cwd)


def _git(args: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        [*GIT, *args],
        cwd=cwd,
        env=os.environ | _GIT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise GitError(args, done.stderr or done.stdout)
    return done.stdout


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]
