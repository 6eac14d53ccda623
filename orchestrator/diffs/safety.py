"""Whether a patch may only change the repository's files (design phase 6).

Before any strategy runs, every path the patch names (``diff --git``, ``---``/``+++``/``***``,
``Index:``, ``rename``/``copy`` lines, with and without their first component) is checked
(:func:`patch_path_problems`): no ``.git`` component (any case, as git itself refuses ``.GIT``
and ``git~1``), no ``..``, no absolute path, nothing below a symbolic link the patch itself
creates. Then, in the container, nothing may go through a symbolic link of the tree, nor write
through one as if it were a file (:func:`tree_problems`). The names ``patch --dry-run`` reports
it would write are checked again before ``patch`` writes anything (:func:`dry_run_names`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable

from orchestrator.diffs.diff import ANY_STARTS, Patch, as_patch, scan, unquote
from orchestrator.errors import SandboxError
from orchestrator.sandbox import Sandbox

APPLY_TIMEOUT = 120.0
PATH_REFUSED = "the patch may only change the repository's files"
# for each NUL-separated path: "through" lines for a symbolic link on the way, "is" when the
# path itself is one (printed NUL-separated: kind, link, path)
SYMLINKS_SCRIPT = r"""cd -- "$2"
while IFS= read -r -d '' p; do
  rest=$p cur=
  while [[ $rest == */* ]]; do
    cur=${cur:+$cur/}${rest%%/*}; rest=${rest#*/}
    if [ -L "$cur" ]; then printf 'through\0%s\0%s\0' "$cur" "$p"; fi
  done
  if [ -L "$p" ]; then printf 'is\0%s\0%s\0' "$p" "$p"; fi
done < "$1"
"""

_NAME_LINE = re.compile(
    r"^(?:(?P<header>---|\+\+\+|\*\*\*) |Index: |(?:rename|copy) (?:from|to) |"
    r"rename (?:old|new) )(?P<name>.*)$"
)
_DRY_RUN_NAME = re.compile(r"^checking file (.*?)(?: \((?:renamed|copied) from (.*)\))?$")
_SYMLINK_MODE = re.compile(r"^(?:new file mode|new mode|index \S+) 120000\s*$", re.MULTILINE)


def patch_path_problems(patch: Patch | str) -> list[str]:
    """Why the paths of ``patch`` are not the repository's to change (empty: they are).

    Every name the patch gives (see the module doc) is checked with :func:`path_problems`,
    and no path may lie below a symbolic link the patch itself creates.
    """
    parsed = as_patch(patch)
    problems = path_problems(_named_paths(parsed.text))
    links = symlink_sections(parsed)
    for part in parsed.files:
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
    for line in scan(patch.splitlines(), ANY_STARTS):
        text = line.text.rstrip("\r")
        if line.kind == "body":
            continue
        if text.startswith("diff --git "):
            rest = text[len("diff --git ") :]
            candidates = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        elif match := _NAME_LINE.match(text):
            rest = match["name"]
            if match["header"] == "***" and re.match(r"^\d+(,\d+)? \*\*\*\*$", rest):
                continue  # a context diff's hunk range
            candidates = [rest.split("\t")[0], *rest.split()[:1]]
        else:
            continue
        for candidate in candidates:
            name = unquote(candidate)
            names.append(name)
            if "/" in name.lstrip("/"):
                names.append(name.lstrip("/").split("/", 1)[1])
    return names


def symlink_sections(patch: Patch | str) -> set[str]:
    """Paths the patch creates or changes as symbolic links (mode 120000)."""
    return {
        part.paths[-1]
        for part in as_patch(patch).files
        if part.paths and _SYMLINK_MODE.search(part.text)
    }


def checked_paths(paths: Iterable[str]) -> list[str]:
    """The paths :func:`tree_problems` checks: each once, none empty or ``/dev/null``."""
    return [p for p in dict.fromkeys(paths) if p and p != "/dev/null"]


def path_listing(paths: Iterable[str]) -> str:
    """The listing file :func:`tree_problems` reads: the checked paths, NUL-separated."""
    return "".join(f"{p}\0" for p in checked_paths(paths))


def tree_problems(
    sandbox: Sandbox,
    work: str,
    repo_dir: str,
    paths: Iterable[str],
    links_ok: set[str],
    *,
    listing: str | None = None,
) -> list[str]:
    """Symbolic links of the tree that ``paths`` would go through or write through.

    A path that is itself a symbolic link may only be changed by a section that treats it as
    one (``links_ok``); a path may never lie below one. ``listing``: a file in the sandbox
    that holds :func:`path_listing` of ``paths`` already (else one is written in ``work``).
    """
    paths = checked_paths(paths)
    if not paths:
        return []
    if listing is None:
        listing = f"{work}/check-{uuid.uuid4().hex[:8]}"
        sandbox.write_file(listing, path_listing(paths))
    result = sandbox.exec(
        ["bash", "-c", SYMLINKS_SCRIPT, "symlinks", listing, repo_dir], timeout=APPLY_TIMEOUT
    )
    if not result.ok:
        raise SandboxError(f"could not check the patch's paths in {repo_dir}: {result.output}")
    return symlink_problems(result.stdout, links_ok)


def symlink_problems(found: str, links_ok: set[str]) -> list[str]:
    """The problems in what :data:`SYMLINKS_SCRIPT` printed (see :func:`tree_problems`)."""
    fields = found.split("\0")
    problems = []
    for kind, link, path in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        if kind == "through":
            problems.append(f"{path}: goes through the symbolic link {link}")
        elif kind == "is" and path not in links_ok:
            problems.append(f"{path}: is a symbolic link; the patch would write through it")
    return problems


def _unquote_shell(text: str) -> str:
    """A name as ``patch`` prints it: plain, or in single quotes (``'a b'``)."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("'\\''", "'")
    return unquote(text)
