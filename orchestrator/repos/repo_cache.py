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
participant). :func:`.clean_history.export_clean_git` makes the ``.git`` that replaces it in
phase 4: only what the base commit reaches. Git itself runs through :mod:`.git_commands`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from filelock import FileLock

from orchestrator.log import get_logger
from orchestrator.models import Instance
from orchestrator.repos.git_commands import (
    GIT_ENV,
    GitError,
    RepoError,
    git,
    git_retrying,
    one_line,
)
from orchestrator.safe_git import GIT
from orchestrator.settings import Settings


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
        git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", str(mirror), str(dest)])
    except GitError as exc:
        raise RepoError(f"Cannot clone mirror {mirror}: {exc.stderr}", "check the mirror.") from exc
    try:
        git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit], dest)
    except GitError as exc:
        raise RepoError(
            f"Cannot check out {commit} in {dest}: {one_line(exc.stderr)}",
            "fetch the commit into the mirror first (ensure_mirror with that commit).",
        ) from exc


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
    listed = git(["rev-list", "--objects", "--missing=print", f"{commit}^{{tree}}"], mirror)
    missing = [line[1:].strip() for line in listed.splitlines() if line.startswith("?")]
    if not missing:
        return []
    paths = {}
    for line in git(["ls-tree", "-r", "--full-tree", commit], mirror).splitlines():
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
    out = git(["diff", "--name-only", "--no-renames", old, new, "--"], mirror)
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
        urls = git(
            ["config", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.url$"], checkout
        )
    except GitError:
        return  # no submodule declared
    for line in urls.splitlines():
        key, _, url = line.partition(" ")
        name = key.removeprefix("submodule.").removesuffix(".url")
        path = git(["config", "-f", ".gitmodules", f"submodule.{name}.path"], checkout).strip()
        try:
            wanted = git(["rev-parse", f"HEAD:{path}"], checkout).strip()
        except GitError:
            continue  # declared but not in this commit's tree
        repo = submodule_repo(url)
        if repo is None:
            raise RepoError(
                f"Submodule {name} has a URL swe-green cannot map to a mirror: {url}",
                "add the repository to SWE_GREEN_MIRROR_DIR as owner__name.git.",
            )
        sub_mirror = ensure_mirror(settings, repo, [wanted])
        git(["config", f"submodule.{name}.url", str(sub_mirror)], checkout)
        try:
            git(
                ["-c", "protocol.file.allow=always", "submodule", "update", "--init",
                 "--no-recommend-shallow", "--", path],
                checkout,
            )  # fmt: skip
        except GitError as exc:
            raise RepoError(
                f"Cannot check out submodule {path} ({repo}) at {wanted}: {one_line(exc.stderr)}",
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
            env=os.environ | GIT_ENV,
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
        git_retrying(["clone", "--bare", "--quiet", "--", url, str(partial)])
        git(["config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*"], partial)
    except GitError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise RepoError(
            f"Cannot clone {repo} from {url}: {one_line(exc.stderr)}",
            "check the URL (SWE_GREEN_REPO_URL_TEMPLATE or SWE_GREEN_MIRROR_DIR) and the network.",
        ) from exc
    partial.rename(mirror)


def _fetch(mirror: Path, url: str, commits: list[str], repo: str) -> None:
    try:
        git_retrying(
            ["fetch", "--quiet", "--prune", "--tags", "--force", "--", url]
            + ["+refs/heads/*:refs/heads/*"],
            mirror,
        )
    except GitError as exc:
        raise RepoError(
            f"Cannot fetch {repo} from {url}: {one_line(exc.stderr)}",
            "check the URL (SWE_GREEN_REPO_URL_TEMPLATE or SWE_GREEN_MIRROR_DIR) and the network.",
        ) from exc
    for commit in _missing(mirror, commits):
        if re.fullmatch(r"[0-9a-f]{40}", commit):
            # not on any branch or tag: ask for it by id (GitHub serves any commit id)
            try:
                git(["fetch", "--quiet", "--", url, f"{commit}:refs/swe-green/{commit}"], mirror)
            except GitError:
                pass  # reported by the caller as a missing commit
