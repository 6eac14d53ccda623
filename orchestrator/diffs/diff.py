"""The unified-diff model: one reading of a patch, shared by every part that handles patches.

:func:`scan` classifies the lines of a text holding unified diffs (git diffs and plain ones),
following hunk line counts so that a removed line reading ``--- x`` is never taken for a file
header. :func:`split_patch` cuts a patch into :class:`FilePatch` sections, each with the paths
it names (``/dev/null`` is not a path; both names of a rename or copy).
:func:`drop_files` filters a patch by file. All pure.

Paths are read as git writes them: C-quoted when they hold odd characters, ``a/``/``b/``
prefixes removed. Patches keep their line endings (CRLF stays CRLF).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
GIT_HEADERS = (
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
_BINARY_STUB = re.compile(r"^Binary files (.*) differ\r?$", re.MULTILINE)
_BINARY_DATA = re.compile(r"^(?:literal|delta) \d+\r?$")
# what starts a file's section: only `diff --git` (reading prose), or any `diff`/`Index:`
# line (applying a patch: what `patch` itself would read as a new file)
GIT_STARTS = ("diff --git ",)
ANY_STARTS = ("diff ", "Index: ")


@dataclass
class Line:
    text: str  # with its line ending
    kind: str  # "start" (a file section begins), "header", "hunk", "body", "other"


def bare(line: str) -> str:
    return line.rstrip("\r\n")


def scan(lines: list[str], starts: tuple[str, ...] = GIT_STARTS) -> Iterator[Line]:
    """Classify the lines of a text that holds unified diffs (see the module doc)."""
    i, n = 0, len(lines)
    in_section = section_has_minus = False
    while i < n:
        text = bare(lines[i])
        if text.startswith(starts):
            in_section, section_has_minus = True, False
            yield Line(lines[i], "start")
            i += 1
        elif text.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            kind = "header" if in_section and not section_has_minus else "start"
            in_section, section_has_minus = True, True
            yield Line(lines[i], kind)
            yield Line(lines[i + 1], "header")
            i += 2
        elif in_section and (match := _HUNK.match(text)):
            yield Line(lines[i], "hunk")
            i = yield from _hunk_body(lines, i + 1, match)
        elif in_section and text.startswith(GIT_HEADERS):
            yield Line(lines[i], "header")
            i += 1
        elif in_section and _BINARY_CHUNK.match(text):
            # base85 data up to and including the blank line that ends the chunk
            yield Line(lines[i], "header")
            i += 1
            while i < n:
                yield Line(lines[i], "header")
                i += 1
                if not bare(lines[i - 1]):
                    break
        else:
            yield Line(lines[i], "other")
            i += 1


def _hunk_body(lines: list[str], i: int, match: re.Match[str]) -> Generator[Line, None, int]:
    """The body lines of a hunk, by its counts; a line no hunk can hold ends it early (returns
    the index of the line after it)."""
    old = int(match[2]) if match[2] is not None else 1
    new = int(match[4]) if match[4] is not None else 1
    while i < len(lines) and (old > 0 or new > 0):
        first = bare(lines[i])[:1]
        if first not in ("", " ", "-", "+", "\\"):
            break
        if first in ("", " "):
            old, new = old - 1, new - 1
        elif first == "-":
            old -= 1
        elif first == "+":
            new -= 1
        yield Line(lines[i], "body")
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        yield Line(lines[i], "body")
        i += 1
    return i


def looks_like_diff(text: str) -> bool:
    kinds = {line.kind for line in scan(text.splitlines(keepends=True))}
    return "start" in kinds and ("hunk" in kinds or "header" in kinds)


# ----------------------------------------------------------------------------- sections
@dataclass
class FilePatch:
    """The part of a patch that changes one file: its text and the names it gives.

    ``old`` is None when the patch creates the file, ``new`` when it deletes it.
    """

    text: str
    old: str | None = None
    new: str | None = None
    named: list[str] = field(default_factory=list)  # header names, in order

    @property
    def paths(self) -> tuple[str, ...]:
        """The repository paths the section changes (both names of a rename); for a section
        without git or ``---``/``+++`` names, its raw header names."""
        found = [p for p in (self.old, self.new) if p]
        return tuple(dict.fromkeys(found)) or raw_header_paths(self.text)

    @property
    def names(self) -> list[str]:
        """The names its ``---``/``+++``/rename/copy lines give, else its ``diff --git`` line's."""
        found = self.named or [p for p in (self.old, self.new) if p]
        return list(dict.fromkeys(found))


def split_patch(patch: str, starts: tuple[str, ...] = ANY_STARTS) -> tuple[str, list[FilePatch]]:
    """The text before the first file (a commit message, say) and the per-file sections."""
    preamble: list[str] = []
    sections: list[list[Line]] = []
    for line in scan(patch.splitlines(keepends=True), starts):
        if line.kind == "start":
            sections.append([])
        if sections:
            sections[-1].append(line)
        else:
            preamble.append(line.text)
    return "".join(preamble), [_file_patch(section) for section in sections]


def join_patch(preamble: str, parts: list[FilePatch]) -> str:
    """The inverse of :func:`split_patch` (for any subset of the parts)."""
    return preamble + "".join(part.text for part in parts) if parts else ""


def _file_patch(lines: list[Line]) -> FilePatch:
    section = FilePatch(text="".join(line.text for line in lines))
    is_git = lines[0].text.startswith("diff --git ")
    git_names: list[str] = []
    plain: list[str | None] = []
    for line in lines:
        if line.kind not in ("start", "header"):
            continue
        text = bare(line.text)
        if text.startswith("diff --git "):
            section.old, section.new = git_line_paths(text[len("diff --git ") :])
            git_names = [p for p in (section.old, section.new) if p]
        elif text.startswith(("--- ", "+++ ")):
            plain.append(path := header_path(text[4:]))
            section.named.extend([path] if path else [])
        elif text.startswith("new file mode"):
            section.old = None
        elif text.startswith("deleted file mode"):
            section.new = None
        elif text.startswith(("rename from ", "copy from ")):
            section.old = unquote(text.split(" from ", 1)[1])
            section.named.append(section.old)
        elif text.startswith(("rename to ", "copy to ")):
            section.new = unquote(text.split(" to ", 1)[1])
            section.named.append(section.new)
    if not is_git and len(plain) >= 2:
        section.old, section.new = plain[0], plain[1]
    if not section.named:
        section.named = git_names
    return section


def raw_header_paths(text: str) -> tuple[str, ...]:
    """The paths of the ``---``/``+++`` headers as written (prefix kept), without /dev/null."""
    found = re.findall(r"^(?:---|\+\+\+) (\S+)", text, re.MULTILINE)
    return tuple(dict.fromkeys(p for p in found if p != "/dev/null"))


def drop_files(patch: str, files: Iterable[str]) -> tuple[str, list[str]]:
    """``patch`` without the sections that touch any of ``files``, and the paths dropped."""
    unwanted = set(files)
    preamble, sections = split_patch(patch, GIT_STARTS)
    kept, dropped = [preamble], list[str]()
    for section in sections:
        paths = section.names
        if unwanted.intersection(paths):
            dropped.extend(p for p in paths if p not in dropped)
        else:
            kept.append(section.text)
    return "".join(kept), dropped


# ----------------------------------------------------------------------------- names
def strip_prefix(path: str) -> str | None:
    """A header's path without git's ``a/``/``b/``; None for ``/dev/null``."""
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def unquote(text: str) -> str:
    """Undo git's C-style quoting of a path (``"a/t\\303\\251st.py"``)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        raw = codecs.escape_decode(text[1:-1].encode())[0]
        return raw.decode("utf-8", errors="surrogateescape")
    return text


def header_path(raw: str) -> str | None:
    """The path of a ``---``/``+++`` header (after the marker), or None for /dev/null."""
    if raw.startswith('"'):
        return strip_prefix(unquote(raw[: _quoted_end(raw) + 1]))
    return strip_prefix(raw.split("\t")[0].rstrip())


def git_line_paths(rest: str) -> tuple[str | None, str | None]:
    """The two names of a ``diff --git`` line (after the marker), quoted or not."""
    if rest.startswith('"'):
        end = _quoted_end(rest)
        return strip_prefix(unquote(rest[: end + 1])), strip_prefix(unquote(rest[end + 1 :]))
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return strip_prefix(rest[:start]), strip_prefix(unquote(rest[start + 1 :]))
    # "a/x b/x": with spaces in names the split is ambiguous; prefer equal halves
    cuts = [m.start() for m in re.finditer(" b/", rest)]
    for cut in cuts:
        if strip_prefix(rest[:cut]) == rest[cut + 3 :]:
            return rest[cut + 3 :], rest[cut + 3 :]
    if cuts:
        return strip_prefix(rest[: cuts[0]]), rest[cuts[0] + 3 :]
    first, _, second = rest.partition(" ")
    return strip_prefix(first), strip_prefix(second) if second else None


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


# ----------------------------------------------------------------------------- transport
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


def drop_binary_stubs(patch: str) -> tuple[str, list[str]]:
    """``patch`` without its content-less binary sections (``Binary files a/x and b/x
    differ``, an empty ``GIT binary patch``), and the files they name.

    No strategy can apply such a section; the official harness's last one (``patch``) skips
    it and applies the rest, so grading does the same, and says which files it left out.
    """
    preamble, parts = split_patch(patch)
    kept = [part for part in parts if not _stub(part)]
    if len(kept) == len(parts):
        return patch, []
    dropped = [part.paths[-1] if part.paths else "?" for part in parts if _stub(part)]
    return (preamble + "".join(part.text for part in kept) if kept else ""), dropped


def _stub(part: FilePatch) -> bool:
    """The section changes a binary file without carrying its data."""
    if _BINARY_STUB.search(part.text):
        return True
    lines = part.text.splitlines()
    for n, line in enumerate(lines):
        if line.rstrip("\r") == "GIT binary patch":
            data = lines[n + 1 : n + 3]
            if len(data) < 2 or not _BINARY_DATA.match(data[0]) or not data[1].strip():
                return True
    return False
