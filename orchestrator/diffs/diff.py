"""The unified-diff model: one reading of a patch, shared by every part that handles patches.

:func:`scan` classifies the lines of a text holding unified diffs (git diffs and plain ones),
following hunk line counts so that a removed line reading ``--- x`` is never taken for a file
header. :meth:`Patch.parse` reads a patch once into a :class:`Patch`: its preamble and its
:class:`FilePatch` sections, each with the paths it names (``/dev/null`` is not a path; both
names of a rename or copy) and its :attr:`~FilePatch.kind`; :attr:`Patch.text` gives back the
exact text read. A patch travels between the phases as a :class:`Patch`, so no later step
splits its text again; functions that take a patch take a :class:`Patch` or a text
(:func:`as_patch` parses it). :meth:`Patch.without` filters a patch by file. All pure; nothing
here raises on a malformed patch (what no rule recognises is preamble or section text).

Paths are read as git writes them: C-quoted when they hold odd characters, ``a/``/``b/``
prefixes removed. Patches keep their line endings (CRLF stays CRLF).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

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
_BINARY_SECTION = re.compile(r"^(?:Binary files .* differ|GIT binary patch)\r?$", re.MULTILINE)
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
FileKind = Literal["added", "deleted", "renamed", "copied", "binary", "modified"]


@dataclass(frozen=True)
class FilePatch:
    """The part of a patch that changes one file: its text and the names it gives.

    ``old`` is None when the patch creates the file, ``new`` when it deletes it.
    """

    text: str
    old: str | None = None
    new: str | None = None
    named: tuple[str, ...] = ()  # header names, in order
    renamed: bool = False  # a ``rename from``/``rename to`` pair
    copied: bool = False  # a ``copy from``/``copy to`` pair

    @property
    def paths(self) -> tuple[str, ...]:
        """The repository paths the section changes (both names of a rename); for a section
        without git or ``---``/``+++`` names, its raw header names."""
        found = [p for p in (self.old, self.new) if p]
        return tuple(dict.fromkeys(found)) or raw_header_paths(self.text)

    @property
    def names(self) -> list[str]:
        """The names its ``---``/``+++``/rename/copy lines give, else its ``diff --git`` line's."""
        found = list(self.named) or [p for p in (self.old, self.new) if p]
        return list(dict.fromkeys(found))

    @property
    def binary(self) -> bool:
        """The section changes a binary file (``GIT binary patch`` or ``Binary files``)."""
        return bool(_BINARY_SECTION.search(self.text))

    @property
    def kind(self) -> FileKind:
        """What the section does to its file; ``binary`` first, then a created or deleted
        file (one name is ``/dev/null``), then a rename or copy."""
        if self.binary:
            return "binary"
        if self.old is None and self.new is not None:
            return "added"
        if self.new is None and self.old is not None:
            return "deleted"
        return "renamed" if self.renamed else "copied" if self.copied else "modified"


@dataclass(frozen=True)
class Patch:
    """A patch read once: the text before its first file (a commit message, say) and its
    files' sections, in order. ``text`` gives the exact text read back (line endings, a
    missing final newline and all); a patch made of a subset of the files (:meth:`without`,
    :meth:`keeping`) gives theirs.

    Read with :meth:`parse`; pure, never raises: a text without file sections is a patch of
    no files whose preamble is the whole text.
    """

    preamble: str = ""
    files: tuple[FilePatch, ...] = ()

    @classmethod
    def parse(cls, text: str, starts: tuple[str, ...] = ANY_STARTS) -> Patch:
        """``text`` cut into file sections (``starts``: what begins one, see :func:`scan`)."""
        preamble: list[str] = []
        sections: list[list[Line]] = []
        for line in scan(text.splitlines(keepends=True), starts):
            if line.kind == "start":
                sections.append([])
            if sections:
                sections[-1].append(line)
            else:
                preamble.append(line.text)
        return cls("".join(preamble), tuple(_file_patch(section) for section in sections))

    @property
    def text(self) -> str:
        return self.preamble + "".join(part.text for part in self.files)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the files' sections change, each once, in order."""
        return tuple(dict.fromkeys(path for part in self.files for path in part.paths if path))

    def is_empty(self) -> bool:
        """Nothing but whitespace: no patch at all."""
        return not self.text.strip()

    def keeping(self, parts: Iterable[FilePatch]) -> Patch:
        """The patch of ``parts`` (some of its files) with its preamble; no files: empty."""
        kept = tuple(parts)
        return Patch(self.preamble if kept else "", kept)

    def without(self, files: Iterable[str]) -> tuple[Patch, list[str]]:
        """The patch without the sections that name any of ``files`` (the preamble kept),
        and the paths dropped."""
        unwanted = set(files)
        kept, dropped = list[FilePatch](), list[str]()
        for section in self.files:
            paths = section.names
            if unwanted.intersection(paths):
                dropped.extend(p for p in paths if p not in dropped)
            else:
                kept.append(section)
        return Patch(self.preamble, tuple(kept)), dropped


def as_patch(patch: Patch | str) -> Patch:
    """``patch`` as a :class:`Patch`: a text is parsed (as ``patch`` reads it)."""
    return patch if isinstance(patch, Patch) else Patch.parse(patch)


def _file_patch(lines: list[Line]) -> FilePatch:
    text = "".join(line.text for line in lines)
    old: str | None = None
    new: str | None = None
    renamed = copied = False
    named: list[str] = []
    is_git = lines[0].text.startswith("diff --git ")
    git_names: list[str] = []
    plain: list[str | None] = []
    for line in lines:
        if line.kind not in ("start", "header"):
            continue
        header = bare(line.text)
        if header.startswith("diff --git "):
            old, new = git_line_paths(header[len("diff --git ") :])
            git_names = [p for p in (old, new) if p]
        elif header.startswith(("--- ", "+++ ")):
            plain.append(path := header_path(header[4:]))
            named.extend([path] if path else [])
        elif header.startswith("new file mode"):
            old = None
        elif header.startswith("deleted file mode"):
            new = None
        elif header.startswith(("rename from ", "copy from ")):
            renamed, copied = (
                renamed or header.startswith("rename"),
                copied or header.startswith("copy"),
            )
            old = unquote(header.split(" from ", 1)[1])
            named.append(old)
        elif header.startswith(("rename to ", "copy to ")):
            new = unquote(header.split(" to ", 1)[1])
            named.append(new)
    if not is_git and len(plain) >= 2:
        old, new = plain[0], plain[1]
    return FilePatch(text, old, new, tuple(named or git_names), renamed, copied)


def raw_header_paths(text: str) -> tuple[str, ...]:
    """The paths of the ``---``/``+++`` headers as written (prefix kept), without /dev/null."""
    found = re.findall(r"^(?:---|\+\+\+) (\S+)", text, re.MULTILINE)
    return tuple(dict.fromkeys(p for p in found if p != "/dev/null"))


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


def drop_binary_stubs(patch: Patch) -> tuple[Patch, list[str]]:
    """``patch`` without its content-less binary sections (``Binary files a/x and b/x
    differ``, an empty ``GIT binary patch``), and the files they name.

    No strategy can apply such a section; the official harness's last one (``patch``) skips
    it and applies the rest, so grading does the same, and says which files it left out.
    """
    kept = [part for part in patch.files if not _stub(part)]
    if len(kept) == len(patch.files):
        return patch, []
    dropped = [part.paths[-1] if part.paths else "?" for part in patch.files if _stub(part)]
    return patch.keeping(kept), dropped


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
