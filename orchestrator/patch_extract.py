"""Finding the participant's patch: in its answer, or as the container's diff.

``extract_patch`` reads a patch out of an answer (a structured field, ``<patch>`` tags, fenced
``diff``/``patch`` blocks, or a bare unified diff in prose). ``touched_files`` and
``drop_files`` read and filter a patch by file. All three are pure. ``container_diff`` asks
git in a sandbox for the diff of its repository against the base commit, without touching the
repository's index or working tree.

Patches keep their line endings (CRLF stays CRLF); a patch always ends with a newline.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import SandboxError
from .sandbox import Sandbox

# structured answer keys that may hold the patch, in order of preference
PATCH_KEYS = ("patch", "model_patch", "diff")
# fence languages that announce a diff
DIFF_LANGUAGES = {"diff", "patch", "udiff", "git-diff", "gitdiff"}

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADERS = (
    "index ",
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "Binary files ",
    "GIT binary patch",
)
_BINARY_CHUNK = re.compile(r"^(literal|delta) \d+$")
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_PATCH_TAG = re.compile(r"<patch>(.*?)(?:</patch>|\Z)", re.DOTALL | re.IGNORECASE)


class ContainerDiffError(SandboxError):
    """git could not produce the container's diff (e.g. the base commit is unknown)."""


# ----------------------------------------------------------------------------- the scanner
@dataclass
class _Line:
    text: str  # with its line ending
    kind: str  # "start" (a file section begins), "header", "hunk", "body", "other"


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _scan(lines: list[str]) -> Iterator[_Line]:
    """Classify the lines of a text that holds unified diffs, following hunk line counts so
    that a removed line starting with ``--- `` is not taken for a file header."""
    i, n = 0, len(lines)
    in_section = False
    section_has_minus = False
    while i < n:
        bare = _bare(lines[i])
        if bare.startswith("diff --git "):
            in_section, section_has_minus = True, False
            yield _Line(lines[i], "start")
            i += 1
        elif bare.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            kind = "header" if in_section and not section_has_minus else "start"
            in_section, section_has_minus = True, True
            yield _Line(lines[i], kind)
            yield _Line(lines[i + 1], "header")
            i += 2
        elif in_section and (match := _HUNK.match(bare)):
            yield _Line(lines[i], "hunk")
            i += 1
            old = int(match[2]) if match[2] is not None else 1
            new = int(match[4]) if match[4] is not None else 1
            while i < n and (old > 0 or new > 0):
                body = _bare(lines[i])
                first = body[:1]
                if body.startswith("diff --git ") or first not in ("", " ", "-", "+", "\\"):
                    break
                if first in ("", " "):
                    old, new = old - 1, new - 1
                elif first == "-":
                    old -= 1
                elif first == "+":
                    new -= 1
                yield _Line(lines[i], "body")
                i += 1
            while i < n and lines[i].startswith("\\"):
                yield _Line(lines[i], "body")
                i += 1
        elif in_section and bare.startswith(_GIT_HEADERS):
            yield _Line(lines[i], "header")
            i += 1
        elif in_section and _BINARY_CHUNK.match(bare):
            # base85 data up to and including the blank line that ends the chunk
            yield _Line(lines[i], "header")
            i += 1
            while i < n:
                yield _Line(lines[i], "header")
                i += 1
                if not _bare(lines[i - 1]):
                    break
        else:
            yield _Line(lines[i], "other")
            i += 1


def _looks_like_diff(text: str) -> bool:
    kinds = {line.kind for line in _scan(text.splitlines(keepends=True))}
    return "start" in kinds and ("hunk" in kinds or "header" in kinds)


# ----------------------------------------------------------------------------- extraction
def extract_patch(text: str | None, data: dict[str, Any] | None = None) -> str | None:
    """The patch in a participant's answer, or None when it holds none.

    Looks, in order, at a structured field (``data["patch"]``, ``["model_patch"]``,
    ``["diff"]``), ``<patch>...</patch>`` tags, fenced ``diff``/``patch`` blocks (several are
    concatenated), other fenced blocks that hold a diff, and a bare unified diff in the text.
    """
    if data:
        for key in PATCH_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                found = _from_text(value)
                if found:
                    return found
    return _from_text(text) if text else None


def _from_text(text: str) -> str | None:
    tagged = [_unfence(block) for block in _PATCH_TAG.findall(text)]
    fences = list(_fenced_blocks(text))
    candidates = (
        tagged,
        [body for language, body in fences if language.lower() in DIFF_LANGUAGES],
        [body for _, body in fences],
        _bare_diffs(text),
    )
    for blocks in candidates:
        diffs = [_tidy(block) for block in blocks if _looks_like_diff(block)]
        if diffs:
            return "".join(dict.fromkeys(diffs))  # identical repeats once
    return None


def _unfence(block: str) -> str:
    """The content of a ``<patch>`` tag, or of the fenced block inside it."""
    inner = [body for _, body in _fenced_blocks(block)]
    return "".join(inner) if inner else block


def _fenced_blocks(text: str) -> Iterator[tuple[str, str]]:
    """``(language, content)`` of every fenced code block, in order."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(_bare(lines[i]))
        if not opening:
            i += 1
            continue
        indent, fence, language = len(opening[1]), opening[2], opening[3]
        body: list[str] = []
        i += 1
        while i < len(lines):
            bare = _bare(lines[i])
            stripped = bare.strip()
            closes = stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0])
            # a diff line " ```" (context) must not close a fence opened at column 0
            if closes and len(bare) - len(bare.lstrip(" ")) <= indent:
                break
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            i += 1
        i += 1
        yield language, "".join(body)


def _bare_diffs(text: str) -> list[str]:
    """Runs of diff lines in prose: from a file header to the first line no diff can hold."""
    blocks, current = [], []
    for line in _scan(text.splitlines(keepends=True)):
        if line.kind == "start" or (current and line.kind != "other"):
            current.append(line.text)
        elif current:
            blocks.append("".join(current))
            current = []
    if current:
        blocks.append("".join(current))
    return blocks


def _tidy(block: str) -> str:
    """Leading blank lines and trailing lines outside the diff removed; ends with a newline."""
    lines = block.splitlines(keepends=True)
    while lines and not lines[0].strip():
        lines.pop(0)
    scanned = list(_scan(lines))
    while scanned and scanned[-1].kind == "other" and not scanned[-1].text.strip():
        scanned.pop()
    text = "".join(line.text for line in scanned)
    if text and not text.endswith("\n"):
        text += "\r\n" if "\r\n" in text else "\n"
    return text


# ----------------------------------------------------------------------------- files
@dataclass
class _Section:
    lines: list[str] = field(default_factory=list)
    git_paths: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def all_paths(self) -> list[str]:
        return list(dict.fromkeys(self.paths or self.git_paths))


def _sections(patch: str) -> tuple[list[str], list[_Section]]:
    preamble: list[str] = []
    sections: list[_Section] = []
    for line in _scan(patch.splitlines(keepends=True)):
        if line.kind == "start":
            sections.append(_Section())
        if not sections:
            preamble.append(line.text)
            continue
        section = sections[-1]
        section.lines.append(line.text)
        if line.kind in ("start", "header"):
            _note_paths(section, _bare(line.text))
    return preamble, sections


def _note_paths(section: _Section, bare: str) -> None:
    if bare.startswith("diff --git "):
        section.git_paths.extend(_git_line_paths(bare[len("diff --git ") :]))
    elif bare.startswith(("--- ", "+++ ")):
        path = _header_path(bare[4:])
        if path is not None:
            section.paths.append(path)
    else:
        for prefix in ("rename from ", "rename to ", "copy from ", "copy to "):
            if bare.startswith(prefix):
                section.paths.append(_unquote(bare[len(prefix) :]))


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def _header_path(raw: str) -> str | None:
    if raw.startswith('"'):
        path = _unquote(raw[: _quoted_end(raw) + 1])
    else:
        path = raw.split("\t")[0].rstrip()
    return None if path == "/dev/null" else _strip_prefix(path)


def _git_line_paths(rest: str) -> list[str]:
    if rest.startswith('"'):
        end = _quoted_end(rest)
        first, second = _unquote(rest[: end + 1]), rest[end + 1 :].strip()
        return [_strip_prefix(first), _strip_prefix(_unquote(second))]
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return [_strip_prefix(rest[:start]), _strip_prefix(_unquote(rest[start + 1 :]))]
    # "a/x b/x": with spaces in names the split is ambiguous; prefer equal halves
    candidates = [m.start() for m in re.finditer(" b/", rest)]
    for cut in candidates:
        if _strip_prefix(rest[:cut]) == rest[cut + 3 :]:
            return [rest[cut + 3 :]]
    if candidates:
        cut = candidates[0]
        return [_strip_prefix(rest[:cut]), rest[cut + 3 :]]
    return [_strip_prefix(part) for part in rest.split(" ", 1)]


def _quoted_end(raw: str) -> int:
    i = 1
    while i < len(raw):
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] == '"':
            return i
        i += 1
    return len(raw) - 1


def _unquote(raw: str) -> str:
    """A path as git prints it: C-quoted (``"a/caf\\303\\251"``) when it has odd characters."""
    if not (len(raw) >= 2 and raw.startswith('"') and raw.endswith('"')):
        return raw
    escapes = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\", "a": b"\a", "b": b"\b"}
    escapes.update({"f": b"\f", "r": b"\r", "v": b"\v"})
    out = bytearray()
    body, i = raw[1:-1], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += escapes.get(nxt, nxt.encode())
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", "surrogateescape")


def touched_files(patch: str) -> list[str]:
    """The repository paths a patch changes, in order: created and deleted files once
    (``/dev/null`` is not a path), renamed and copied files by both names."""
    seen: dict[str, None] = {}
    for section in _sections(patch)[1]:
        seen.update(dict.fromkeys(section.all_paths()))
    return list(seen)


def drop_files(patch: str, files: Iterable[str]) -> tuple[str, list[str]]:
    """``patch`` without the sections that touch any of ``files``, and the paths dropped."""
    unwanted = set(files)
    preamble, sections = _sections(patch)
    kept, dropped = list(preamble), []
    for section in sections:
        paths = section.all_paths()
        if unwanted.intersection(paths):
            dropped.extend(p for p in paths if p not in dropped)
        else:
            kept.extend(section.lines)
    return "".join(kept), dropped


# ----------------------------------------------------------------------------- the container
_DIFF_SCRIPT = r"""set -eu
base=$1 out=$2
cd -- "$3"
git=(git -c safe.directory='*' -c core.quotepath=true -c core.hooksPath=/dev/null \
     -c core.fsmonitor=false)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
index=$("${git[@]}" rev-parse --git-path index)
export GIT_INDEX_FILE=$tmp/index
# start from a copy of the real index, so that git can trust its stat data and need not hash
# every file again; `add -A` then makes the copy match the working tree
if [ -f "$index" ]; then cp "$index" "$GIT_INDEX_FILE"; else "${git[@]}" read-tree "$base"; fi
"${git[@]}" add -A
"${git[@]}" diff --cached --binary --no-renames --no-color --no-ext-diff "$base" -- >"$out"
"""


def container_diff(sandbox: Sandbox, base_commit: str, repo_dir: str = "/testbed") -> str:
    """The diff of ``repo_dir`` in the container against ``base_commit``: edited, deleted and
    new files (untracked ones too, ignored ones not), binary changes included.

    Uses a temporary index, so the repository's own index and working tree stay as they are:
    safe while the participant is still working. Bytes that are not UTF-8 are kept as
    surrogate escapes (``text.encode("utf-8", "surrogateescape")`` gives them back).
    """
    out = f"/tmp/swe-container-diff-{uuid.uuid4().hex}.patch"
    argv = ["bash", "-c", _DIFF_SCRIPT, "container-diff", base_commit, out, repo_dir]
    result = sandbox.exec(argv, timeout=300)
    try:
        if not result.ok:
            why = "timed out" if result.timed_out else result.output.strip()[-1000:]
            raise ContainerDiffError(
                f"cannot diff {repo_dir} against {base_commit[:12]} in {sandbox.name}: {why}"
            )
        data = sandbox.read_file(out)
    finally:
        sandbox.exec(["rm", "-f", out], timeout=30)
    return data.decode("utf-8", "surrogateescape")
