"""Applying a patch inside the sandbox: four strategies in order, the first that works wins.

The strategies (design phase 6): ``git apply``, ``git apply --ignore-whitespace``,
``git apply --3way``, ``patch -p1 --fuzz=N``. Each attempt either applies the whole patch or
leaves the tree as it found it: ``git apply`` is atomic, ``patch`` runs with ``--dry-run``
first, and a failed ``--3way`` (which leaves conflict markers and unmerged index entries) is
undone from a backup of the files the patch touches and of the index, taken before the first
attempt. The tree is never reset wholesale, so whatever state it had before (a participant's
patch already applied, untracked build files) survives. A successful ``--3way`` leaves its
result unstaged, as the other strategies do.

The patch reaches the container as a file, never through a shell string. Before applying,
:func:`normalize_patch` repairs what transport does to patches: CRLF line endings on the
patch's own header lines (the whole text went through a CRLF conversion) and a missing final
newline. Binary changes without their data (``Binary files a/x and b/x differ``, or a
``GIT binary patch`` without its literal) fail at once with a clear message: no strategy can
apply them, and ``patch`` would silently apply the rest.

**A patch may only change the repository's files.** Before any strategy runs, every path the
patch names (``diff --git``, ``---``/``+++``/``***``, ``Index:``, ``rename``/``copy``
lines, with and without their first component) is checked (:func:`patch_path_problems`): no
``.git`` component (any case, as git itself refuses ``.GIT`` and ``git~1``), no ``..``, no
absolute path, nothing below a symbolic link the patch itself creates. Then, in the container,
nothing may go through a symbolic link of the tree, nor write through one as if it were a file.
A refused patch is not applied at all: :attr:`ApplyOutcome.refused` is set and the error says
which path and why. Two more guards stand behind these checks: when ``git apply`` refuses a
path as invalid (``invalid path``, ``beyond a symbolic link``), no later strategy is tried,
and the names ``patch --dry-run`` reports it would write are checked again before ``patch``
writes anything (it reads file names from lines :func:`split_patch` does not know, e.g. context
diffs). Every git command runs with hooks and fsmonitor off (:mod:`orchestrator.safe_git`).

The pure helpers (:func:`split_patch`, :func:`join_patch`, :func:`binary_stubs`) are shared
with the grading, which drops some files from a participant's patch before applying it.
"""

from __future__ import annotations

import codecs
import posixpath
import re
import shlex
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from orchestrator.errors import SandboxError
from orchestrator.recipes import test_files
from orchestrator.safe_git import GIT, SHELL_GIT_FUNCTION
from orchestrator.sandbox import Sandbox

APPLY_TIMEOUT = 120.0
EMPTY_PATCH = "empty patch"

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_SECTION_START = ("diff ", "Index: ")
# what a hunk line takes from the old and the new side; an empty line is a bare context line
_HUNK_LINE = {" ": (1, 1), "": (1, 1), "-": (1, 0), "+": (0, 1), "\\": (0, 0)}
_BINARY_STUB = re.compile(r"^Binary files (.*) differ\r?$", re.MULTILINE)
_BINARY_DATA = re.compile(r"^(?:literal|delta) \d+\r?$")
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
# for each NUL-separated path: "through" lines for a symbolic link on the way, "is" when the
# path itself is one (printed NUL-separated: kind, link, path)
_SYMLINKS = r"""cd -- "$2"
while IFS= read -r -d '' p; do
  rest=$p cur=
  while [[ $rest == */* ]]; do
    cur=${cur:+$cur/}${rest%%/*}; rest=${rest#*/}
    if [ -L "$cur" ]; then printf 'through\0%s\0%s\0' "$cur" "$p"; fi
  done
  if [ -L "$p" ]; then printf 'is\0%s\0%s\0' "$p" "$p"; fi
done < "$1"
"""
PATH_REFUSED = "the patch may only change the repository's files"
# what git apply says when it refuses a path as unsafe: no other strategy may write it
_GIT_REFUSED_PATH = re.compile(
    r"invalid path|beyond a symbolic link|outside (?:the )?repository", re.IGNORECASE
)
_NAME_LINE = re.compile(
    r"^(?:(?P<header>---|\+\+\+|\*\*\*) |Index: |(?:rename|copy) (?:from|to) |"
    r"rename (?:old|new) )(?P<name>.*)$"
)
_DRY_RUN_NAME = re.compile(r"^checking file (.*?)(?: \((?:renamed|copied) from (.*)\))?$")
_SYMLINK_MODE = re.compile(r"^(?:new file mode|new mode|index \S+) 120000\s*$", re.MULTILINE)


class ApplyOutcome(BaseModel):
    """What happened to a patch: applied or not, by which strategy, and why not."""

    applied: bool
    refused: bool = False  # a path of the patch is not the repository's to change
    strategy: str | None = None
    error: str = ""  # the last strategy's error output, or why none was tried
    log: str = ""  # every attempt: its command and output


@dataclass(frozen=True)
class FilePatch:
    """The part of a patch that changes one file (both names of a rename)."""

    paths: tuple[str, ...]
    text: str


def normalize_patch(patch: str) -> str:
    """The patch with transport damage repaired: CRLF-converted text, no final newline.

    CRLF line endings are turned into LF only when the patch's own header lines
    (``diff --git``, ``---``, ``+++``, ``@@``) end in CR: then the whole text was converted
    in transit. A patch with LF headers and CR inside its content lines changes a file that
    has CRLF line endings, and is left alone.
    """
    headers = [
        line
        for line in patch.split("\n")
        if line.startswith(("diff --git ", "--- ", "+++ ", "@@ "))
    ]
    if headers and all(line.endswith("\r") for line in headers):
        patch = patch.replace("\r\n", "\n")
    if patch and not patch.endswith("\n"):
        patch += "\n"
    return patch


def split_patch(patch: str) -> tuple[str, list[FilePatch]]:
    """The text before the first file (a commit message, say) and the per-file parts.

    Hunk line counts are followed, so a removed line that reads ``-- x`` is never taken for
    a ``--- x`` file header. Both git diffs and plain unified diffs are understood.
    """
    preamble: list[str] = []
    sections: list[list[str]] = []
    old_left = new_left = 0
    awaiting_header = False  # a "diff ..." line started a section whose ---/+++ is to come
    lines = patch.splitlines(keepends=True)
    for n, line in enumerate(lines):
        bare = line.rstrip("\r\n")
        if old_left > 0 or new_left > 0:
            step = _HUNK_LINE.get(bare[:1])
            if step is not None:
                old_left, new_left = old_left - step[0], new_left - step[1]
                sections[-1].append(line)
                continue
            old_left = new_left = 0  # a malformed hunk ends early
        hunk = _HUNK.match(bare)
        following = lines[n + 1] if n + 1 < len(lines) else ""
        starts_plain = bare.startswith("--- ") and following.startswith("+++ ")
        if hunk and sections:
            old_left = int(hunk.group(1) or 1)
            new_left = int(hunk.group(2) or 1)
            awaiting_header = False
            sections[-1].append(line)
        elif bare.startswith(_SECTION_START):
            sections.append([line])
            awaiting_header = True
        elif starts_plain and not awaiting_header:
            sections.append([line])
        elif sections:
            if starts_plain:
                awaiting_header = False
            sections[-1].append(line)
        else:
            preamble.append(line)
    return "".join(preamble), [_file_patch("".join(section)) for section in sections]


def join_patch(preamble: str, parts: list[FilePatch]) -> str:
    """The inverse of :func:`split_patch` (for any subset of the parts)."""
    return preamble + "".join(part.text for part in parts) if parts else ""


def binary_stubs(patch: str) -> list[str]:
    """The files whose binary change the patch announces without carrying the data."""
    stubs: list[str] = []
    for part in split_patch(patch)[1]:
        lines = part.text.splitlines()
        stub = bool(_BINARY_STUB.search(part.text))
        for n, line in enumerate(lines):
            if line.rstrip("\r") == "GIT binary patch":
                data = lines[n + 1 : n + 3]
                if len(data) < 2 or not _BINARY_DATA.match(data[0]) or not data[1].strip():
                    stub = True
        if stub:
            stubs.append(part.paths[-1] if part.paths else "?")
    return stubs


def apply_patch(
    sandbox: Sandbox, patch: str, *, repo_dir: str = "/testbed", fuzz: int = 3
) -> ApplyOutcome:
    """Apply ``patch`` to the tree at ``repo_dir`` with the first strategy that works."""
    if not patch.strip():
        return ApplyOutcome(applied=False, error=EMPTY_PATCH)
    patch = normalize_patch(patch)
    stubs = binary_stubs(patch)
    if stubs:
        return ApplyOutcome(
            applied=False,
            error=(
                f"the patch changes binary file(s) {', '.join(stubs)} without their content "
                "(a 'Binary files ... differ' line or an empty 'GIT binary patch'); no "
                "strategy can apply it: make the patch with `git diff --binary`"
            ),
        )
    problems = patch_path_problems(patch)
    if problems:
        return _refused(problems)
    work = f"/tmp/swe-green-apply-{uuid.uuid4().hex[:12]}"
    patch_file = f"{work}/patch.diff"
    touched = _touched_paths(patch)
    sandbox.write_file(patch_file, patch.encode("utf-8", errors="surrogateescape"))
    sandbox.write_file(f"{work}/paths", "".join(f"{p}\0" for p in touched))
    log: list[str] = []
    try:
        problems = _tree_problems(sandbox, work, repo_dir, touched, _symlink_sections(patch))
        if problems:
            return _refused(problems)
        _run_script(sandbox, _BACKUP, "back up", work, repo_dir)
        error = ""
        for strategy, commands, may_write in _strategies(patch_file, fuzz):
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
    finally:
        sandbox.exec(["rm", "-rf", work], timeout=60)


def _file_patch(text: str) -> FilePatch:
    return FilePatch(paths=tuple(test_files(text)) or _plain_paths(text), text=text)


def _plain_paths(text: str) -> tuple[str, ...]:
    """The paths of the ``---``/``+++`` headers as written (prefix kept), without /dev/null."""
    found = re.findall(r"^(?:---|\+\+\+) (\S+)", text, re.MULTILINE)
    return tuple(dict.fromkeys(p for p in found if p != "/dev/null"))


def _touched_paths(patch: str) -> list[str]:
    """Relative paths the patch may write, as ``git apply`` and ``patch -p1`` read them."""
    paths: list[str] = []
    for part in split_patch(patch)[1]:
        paths.extend(part.paths)
        if not part.text.startswith("diff --git "):  # patch -p1 strips any first component
            paths.extend(p.split("/", 1)[1] for p in _plain_paths(part.text) if "/" in p)
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
            problems = path_problems(names) or _tree_problems(
                sandbox, posixpath.dirname(argv[-2]), repo_dir, names, set()
            )
            if problems:
                return False, f"{PATH_REFUSED}: " + "; ".join(problems)
    return True, ""


def patch_path_problems(patch: str) -> list[str]:
    """Why the paths of ``patch`` are not the repository's to change (empty: they are).

    Every name the patch gives (see the module doc) is checked with :func:`path_problems`,
    and no path may lie below a symbolic link the patch itself creates.
    """
    problems = path_problems(_named_paths(patch))
    links = _symlink_sections(patch)
    for part in split_patch(patch)[1]:
        for path in part.paths:
            for link in links:
                if path.startswith(link.rstrip("/") + "/"):
                    problems.append(
                        f"{path}: goes through the symbolic link {link} the patch creates"
                    )
    return list(dict.fromkeys(problems))


def path_problems(paths: Iterable[str]) -> list[str]:
    """Why each of ``paths`` (as a patch names them) is not a repository file's path."""
    problems: list[str] = []
    for path in dict.fromkeys(paths):
        if path == "/dev/null" or not path:
            continue
        parts = path.split("/")
        shown = path[2:] if path[:2] in ("a/", "b/") else path
        if path.startswith("/"):
            problems.append(f"{shown}: an absolute path")
        elif ".." in parts:
            problems.append(f"{shown}: leaves the repository ('..')")
        elif any(_is_git_dir(part) for part in parts):
            problems.append(f"{shown}: inside .git (git's own data and hooks)")
    return list(dict.fromkeys(problems))


def dry_run_names(output: str) -> list[str]:
    """The files ``patch --dry-run`` says it would write (both names of a rename)."""
    names: list[str] = []
    for line in output.splitlines():
        match = _DRY_RUN_NAME.match(line.rstrip("\r"))
        if match:
            names.extend(_unquote_shell(n) for n in match.groups() if n is not None)
    return names


def _is_git_dir(part: str) -> bool:
    folded = part.casefold().rstrip(". ")
    return folded == ".git" or folded == "git~1"


def _named_paths(patch: str) -> list[str]:
    """Every path any header line of ``patch`` names, raw and without its first component.

    Hunk lines are skipped by their counts, so a removed line ``-- x`` is no header.
    """
    names: list[str] = []
    old_left = new_left = 0
    for line in patch.splitlines():
        bare = line.rstrip("\r")
        if old_left > 0 or new_left > 0:
            step = _HUNK_LINE.get(bare[:1])
            if step is not None:
                old_left, new_left = old_left - step[0], new_left - step[1]
                continue
            old_left = new_left = 0
        if hunk := _HUNK.match(bare):
            old_left, new_left = int(hunk.group(1) or 1), int(hunk.group(2) or 1)
            continue
        if bare.startswith("diff --git "):
            rest = bare[len("diff --git ") :]
            candidates = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        elif match := _NAME_LINE.match(bare):
            rest = match["name"]
            if match["header"] == "***" and re.match(r"^\d+(,\d+)? \*\*\*\*$", rest):
                continue  # a context diff's hunk range
            candidates = [rest.split("\t")[0], *rest.split()[:1]]
        else:
            continue
        for candidate in candidates:
            name = _unquote_c(candidate.strip())
            names.append(name)
            if "/" in name.lstrip("/"):
                names.append(name.lstrip("/").split("/", 1)[1])
    return names


def _symlink_sections(patch: str) -> set[str]:
    """Paths the patch creates or changes as symbolic links (mode 120000)."""
    return {
        part.paths[-1]
        for part in split_patch(patch)[1]
        if part.paths and _SYMLINK_MODE.search(part.text)
    }


def _tree_problems(
    sandbox: Sandbox, work: str, repo_dir: str, paths: Iterable[str], links_ok: set[str]
) -> list[str]:
    """Symbolic links of the tree that ``paths`` would go through or write through.

    A path that is itself a symbolic link may only be changed by a section that treats it as
    one (``links_ok``); a path may never lie below one.
    """
    paths = [p for p in dict.fromkeys(paths) if p and p != "/dev/null"]
    if not paths:
        return []
    listing = f"{work}/check-{uuid.uuid4().hex[:8]}"
    sandbox.write_file(listing, "".join(f"{p}\0" for p in paths))
    result = sandbox.exec(
        ["bash", "-c", _SYMLINKS, "symlinks", listing, repo_dir], timeout=APPLY_TIMEOUT
    )
    if not result.ok:
        raise SandboxError(f"could not check the patch's paths in {repo_dir}: {result.output}")
    fields = result.stdout.split("\0")
    problems = []
    for kind, link, path in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        if kind == "through":
            problems.append(f"{path}: goes through the symbolic link {link}")
        elif kind == "is" and path not in links_ok:
            problems.append(f"{path}: is a symbolic link; the patch would write through it")
    return problems


def _refused(problems: list[str], log: list[str] | None = None) -> ApplyOutcome:
    return ApplyOutcome(
        applied=False,
        refused=True,
        error=f"{PATH_REFUSED}, refused: " + "; ".join(problems),
        log="\n".join(log or []),
    )


def _unquote_c(text: str) -> str:
    """Undo git's C-style quoting of a path (``"a/t\\303\\251st.py"``)."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        raw = codecs.escape_decode(text[1:-1].encode())[0]
        return raw.decode("utf-8", errors="surrogateescape")
    return text


def _unquote_shell(text: str) -> str:
    """A name as ``patch`` prints it: plain, or in single quotes (``'a b'``)."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("'\\''", "'")
    return _unquote_c(text)


def _run_script(sandbox: Sandbox, script: str, action: str, work: str, repo_dir: str) -> None:
    result = sandbox.exec(
        ["bash", "-c", script, action, work], workdir=repo_dir, timeout=APPLY_TIMEOUT
    )
    if not result.ok:
        raise SandboxError(
            f"could not {action} the files a patch touches in {repo_dir}: "
            f"{result.output.strip() or result.exit_code}"
        )
