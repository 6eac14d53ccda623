"""Applying a patch inside the sandbox: four strategies in order, the first that works wins.

The strategies (design phase 6): ``git apply``, ``git apply --ignore-whitespace``,
``git apply --3way``, ``patch -p1 --fuzz=N``. Each attempt either applies the whole patch or
leaves the tree as it found it: ``git apply`` is atomic, ``patch`` runs with ``--dry-run``
first, and a failed ``--3way`` (which leaves conflict markers and unmerged index entries) is
undone from a backup of the files the patch touches and of the index, taken before the first
attempt. The tree is never reset wholesale, so whatever state it had before (a participant's
patch already applied, untracked build files) survives. A successful ``--3way`` leaves its
result unstaged, as the other strategies do.

The patch comes as phase 6's model (:class:`~orchestrator.diffs.diff.Patch`; a text is read
once here) and reaches the container as a file of its sections' exact text, never through a
shell string. A failed strategy is an outcome (:class:`ApplyOutcome`), never an exception;
:func:`apply_patch` raises :class:`~orchestrator.errors.SandboxError` only when the container
cannot check or back up the files the patch touches. Before applying,
:func:`normalize_patch` repairs what transport does to patches: CRLF line endings on the
patch's own header lines (the whole text went through a CRLF conversion) and a missing final
newline. Binary changes without their data (``Binary files a/x and b/x differ``, or a
``GIT binary patch`` without its literal) are dropped and named (:attr:`ApplyOutcome.
dropped_binary_stubs`, ``apply.log``): no strategy can apply them, and the official harness's
``patch`` fallback skips them and applies the rest (an agent's script wrote an image, say). A
patch of nothing but such stubs is not applied (``no_op``).

A patch whose paths are not the repository's to change (:mod:`orchestrator.diffs.safety`)
is not applied at all: :attr:`ApplyOutcome.refused` is set and the error says which path and
why. When ``git apply`` refuses a path as invalid (``invalid path``, ``beyond a symbolic
link``), no later strategy is tried. Every git command runs with hooks and fsmonitor off
(:mod:`orchestrator.safe_git`).
"""

from __future__ import annotations

import posixpath
import re
import shlex
import tempfile
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from orchestrator.diffs.diff import Patch, drop_binary_stubs, normalize_patch, raw_header_paths
from orchestrator.diffs.safety import (
    APPLY_TIMEOUT,
    PATH_REFUSED,
    SYMLINKS_SCRIPT,
    dry_run_names,
    patch_path_problems,
    path_listing,
    path_problems,
    symlink_problems,
    symlink_sections,
    tree_problems,
)
from orchestrator.errors import SandboxError
from orchestrator.safe_git import GIT, SHELL_GIT_FUNCTION
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import TESTBED

EMPTY_PATCH = "empty patch"

# undo a failed attempt: put back the touched paths and the index as they were
_BACKUP = f"""set -e
{SHELL_GIT_FUNCTION}
work=$1
index=$(git rev-parse --git-path index 2>/dev/null) || index=
if [ -n "$index" ] && [ -f "$index" ]; then cp -p "$index" "$work/index"; fi
tar --null -T "$work/paths" --ignore-failed-read -cf "$work/backup.tar" 2>/dev/null
"""
_RESTORE = f"""set -e
{SHELL_GIT_FUNCTION}
work=$1
xargs -0 -r rm -rf -- < "$work/paths"
tar -xpf "$work/backup.tar"
index=$(git rev-parse --git-path index 2>/dev/null) || index=
if [ -f "$work/index" ] && [ -n "$index" ]; then cp -p "$work/index" "$index"; fi
"""
_RESTORE_INDEX = f"""set -e
{SHELL_GIT_FUNCTION}
index=$(git rev-parse --git-path index)
if [ -f "$1/index" ]; then cp -p "$1/index" "$index"; fi
"""
# the first attempt in one exec (the common case: the check, the backup and `git apply` pass):
# the symbolic-link check of the listed paths, the backup, then the command given; the work
# directory goes with success. Exit 200: the check failed, 201: links found (printed, to be
# judged), 202: the backup failed; else the command's own status.
_FIRST_ATTEMPT = f"""work=$1 repo=$2; shift 2
bash -c {shlex.quote(SYMLINKS_SCRIPT)} symlinks "$work/paths" "$repo" > "$work/links" || exit 200
if [ -s "$work/links" ]; then cat "$work/links"; exit 201; fi
bash -c {shlex.quote(_BACKUP)} "back up" "$work" || exit 202
"$@" || exit $?
rm -rf -- "$work" || true
"""


class _First(BaseModel):
    """How the first attempt in one exec went: ``applied``; ``refused`` (``problems``);
    ``failed`` (checked and backed up, the command failed: ``error``); ``links`` (links to
    judge, all allowed: not backed up yet); ``unknown`` (timed out: nothing is known)."""

    kind: Literal["applied", "refused", "failed", "links", "unknown"]
    problems: list[str] = []
    error: str = ""


# what git apply says when it refuses a path as unsafe: no other strategy may write it
_GIT_REFUSED_PATH = re.compile(
    r"invalid path|beyond a symbolic link|outside (?:the )?repository", re.IGNORECASE
)


class ApplyOutcome(BaseModel):
    """What happened to a patch: applied or not, by which strategy, and why not."""

    applied: bool
    refused: bool = False  # a path of the patch is not the repository's to change
    strategy: str | None = None
    error: str = ""  # the last strategy's error output, or why none was tried
    log: str = ""  # every attempt: its command and output
    # files whose binary change came without its data: left out of the patch
    dropped_binary_stubs: list[str] = []


def apply_patch(
    sandbox: Sandbox, patch: Patch | str, *, repo_dir: str = TESTBED, fuzz: int = 3
) -> ApplyOutcome:
    """Apply ``patch`` to the tree at ``repo_dir`` with the first strategy that works. A
    :class:`~.diff.Patch` is used as read unless transport repair changes its text (then the
    repaired text is read again). Raises :class:`~orchestrator.errors.SandboxError` when the
    container cannot check or back up the files the patch touches."""
    text = patch.text if isinstance(patch, Patch) else patch
    if not text.strip():
        return ApplyOutcome(applied=False, error=EMPTY_PATCH)
    normal = normalize_patch(text)
    parsed = patch if isinstance(patch, Patch) and normal == text else Patch.parse(normal)
    parsed, stubs = drop_binary_stubs(parsed)
    if stubs and parsed.is_empty():
        return ApplyOutcome(
            applied=False,
            dropped_binary_stubs=stubs,
            error=(
                f"the patch only changes binary file(s) {', '.join(stubs)}, without their "
                "content (a 'Binary files ... differ' line or an empty 'GIT binary patch'): "
                "nothing to apply (make the patch with `git diff --binary`)"
            ),
        )
    outcome = _apply(sandbox, parsed, repo_dir, fuzz)
    if stubs:
        note = (
            f"left out: binary file(s) changed without their content ({', '.join(stubs)}); "
            "the rest of the patch is applied, as the official harness's patch fallback does"
        )
        outcome = outcome.model_copy(
            update={"dropped_binary_stubs": stubs, "log": f"{note}\n{outcome.log}"}
        )
    return outcome


def _put_work(sandbox: Sandbox, work: str, patch: str, touched: list[str]) -> None:
    """The work directory with ``patch.diff`` and ``paths`` (NUL-separated), in one copy."""
    with tempfile.TemporaryDirectory(prefix="swe-green-apply-") as tmp:
        Path(tmp, "patch.diff").write_bytes(patch.encode("utf-8", errors="surrogateescape"))
        Path(tmp, "paths").write_bytes(path_listing(touched).encode())
        sandbox.put_dir(Path(tmp), work)


def _apply(sandbox: Sandbox, patch: Patch, repo_dir: str, fuzz: int) -> ApplyOutcome:
    """Apply a normalized patch without binary stubs (see :func:`apply_patch`)."""
    problems = patch_path_problems(patch)
    if problems:
        return _refused(problems)
    work = f"/tmp/swe-green-apply-{uuid.uuid4().hex[:12]}"
    patch_file = f"{work}/patch.diff"
    touched = _touched_paths(patch)
    _put_work(sandbox, work, patch.text, touched)
    links_ok = symlink_sections(patch)
    strategies = _strategies(patch_file, fuzz)
    log: list[str] = []
    first = _first_attempt(sandbox, strategies[0], work, repo_dir, links_ok, log)
    if first.kind == "applied":  # the work directory went with it
        return ApplyOutcome(applied=True, strategy=strategies[0][0], log="\n".join(log))
    try:
        if first.kind == "refused":
            return _refused(first.problems)
        if first.kind == "unknown":
            problems = tree_problems(
                sandbox, work, repo_dir, touched, links_ok, listing=f"{work}/paths"
            )
            if problems:
                return _refused(problems)
        if first.kind != "failed":
            _run_script(sandbox, _BACKUP, "back up", work, repo_dir)
        return _each_strategy(sandbox, strategies, first, work, repo_dir, log)
    finally:
        sandbox.exec(["rm", "-rf", work], timeout=60)


def _each_strategy(
    sandbox: Sandbox,
    strategies: list[tuple[str, list[list[str]], bool]],
    first: _First,
    work: str,
    repo_dir: str,
    log: list[str],
) -> ApplyOutcome:
    """The strategies in order until one applies (a failed first attempt counts as the
    first's), the files restored from the backup after each that may have written; a path
    refused by git or patch ends the attempt."""
    error = ""
    for index, (strategy, commands, may_write) in enumerate(strategies):
        if index == 0 and first.kind == "failed":
            ok, error = False, first.error
        else:
            ok, error = _attempt(sandbox, strategy, commands, repo_dir, log)
        if not ok and strategy.startswith("git") and _GIT_REFUSED_PATH.search(error):
            if may_write:
                _run_script(sandbox, _RESTORE, "restore", work, repo_dir)
            return _refused([error], log)
        if not ok and strategy.startswith("patch") and error.startswith(PATH_REFUSED):
            return _refused([error.removeprefix(PATH_REFUSED + ": ")], log)
        if ok:
            if "--3way" in strategy:  # keep its result, unstaged like the others
                _run_script(sandbox, _RESTORE_INDEX, "unstage", work, repo_dir)
            return ApplyOutcome(applied=True, strategy=strategy, log="\n".join(log))
        if may_write:
            _run_script(sandbox, _RESTORE, "restore", work, repo_dir)
    return ApplyOutcome(applied=False, error=error, log="\n".join(log))


def _first_attempt(
    sandbox: Sandbox,
    first: tuple[str, list[list[str]], bool],
    work: str,
    repo_dir: str,
    links_ok: set[str],
    log: list[str],
) -> _First:
    """The check, the backup and the first strategy (a single command) in one exec."""
    strategy, (argv,), _ = first
    result = sandbox.exec(
        ["bash", "-c", _FIRST_ATTEMPT, "first-attempt", work, repo_dir, *argv],
        workdir=repo_dir, timeout=APPLY_TIMEOUT,
    )  # fmt: skip
    output = result.output.strip()
    if result.timed_out:
        return _First(kind="unknown")
    if result.exit_code == 200:
        raise SandboxError(f"could not check the patch's paths in {repo_dir}: {output}")
    if result.exit_code == 202:
        raise SandboxError(f"could not back up the files a patch touches in {repo_dir}: {output}")
    if result.exit_code == 201:
        problems = symlink_problems(result.stdout, links_ok)
        return _First(kind="refused", problems=problems) if problems else _First(kind="links")
    log.append(f"[{strategy}] $ {shlex.join(argv)}\n{output}\n[exit {result.exit_code}]")
    if result.ok:
        return _First(kind="applied")
    return _First(kind="failed", error=f"{strategy}: {output or f'exit code {result.exit_code}'}")


def _touched_paths(patch: Patch) -> list[str]:
    """Relative paths the patch may write, as ``git apply`` and ``patch -p1`` read them."""
    paths: list[str] = []
    for part in patch.files:
        paths.extend(part.paths)
        if not part.text.startswith("diff --git "):  # patch -p1 strips any first component
            paths.extend(p.split("/", 1)[1] for p in raw_header_paths(part.text) if "/" in p)
    safe = [p for p in paths if p and not p.startswith("/") and ".." not in p.split("/")]
    return list(dict.fromkeys(safe))


def _strategies(patch_file: str, fuzz: int) -> list[tuple[str, list[list[str]], bool]]:
    """``(name, commands, may_write_on_failure)``; the commands run in order, all must pass."""
    git_apply = [*GIT, "apply", "--verbose"]
    patch_cmd = [
        "patch",
        "-p1",
        f"--fuzz={fuzz}",
        "--batch",
        "--forward",
        "--no-backup-if-mismatch",
        "--reject-file=-",
        "-i",
        patch_file,
    ]
    return [
        ("git apply", [[*git_apply, patch_file]], False),
        (
            "git apply --ignore-whitespace",
            [[*git_apply, "--ignore-whitespace", patch_file]],
            False,
        ),
        ("git apply --3way", [[*git_apply, "--3way", patch_file]], True),
        (f"patch --fuzz={fuzz}", [[*patch_cmd, "--dry-run"], patch_cmd], True),
    ]


def _attempt(
    sandbox: Sandbox, strategy: str, commands: list[list[str]], repo_dir: str, log: list[str]
) -> tuple[bool, str]:
    for argv in commands:
        result = sandbox.exec(argv, workdir=repo_dir, timeout=APPLY_TIMEOUT)
        output = result.output.strip()
        log.append(f"[{strategy}] $ {shlex.join(argv)}\n{output}\n[exit {result.exit_code}]")
        if not result.ok:
            reason = "timed out" if result.timed_out else f"exit code {result.exit_code}"
            return False, f"{strategy}: {output or reason}"
        if "--dry-run" in argv:  # the names patch would write, checked before it writes them
            names = dry_run_names(result.stdout)
            problems = path_problems(names) or tree_problems(
                sandbox, posixpath.dirname(argv[-2]), repo_dir, names, set()
            )
            if problems:
                return False, f"{PATH_REFUSED}: " + "; ".join(problems)
    return True, ""


def _refused(problems: list[str], log: list[str] | None = None) -> ApplyOutcome:
    return ApplyOutcome(
        applied=False,
        refused=True,
        error=f"{PATH_REFUSED}, refused: " + "; ".join(problems),
        log="\n".join(log or []),
    )


def _run_script(sandbox: Sandbox, script: str, action: str, work: str, repo_dir: str) -> None:
    result = sandbox.exec(
        ["bash", "-c", script, action, work], workdir=repo_dir, timeout=APPLY_TIMEOUT
    )
    if not result.ok:
        raise SandboxError(
            f"could not {action} the files a patch touches in {repo_dir}: "
            f"{result.output.strip() or result.exit_code}"
        )
