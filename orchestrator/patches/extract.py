"""Finding the participant's patch in its answer (pure).

``extract_patch`` reads a patch out of an answer (a structured field, ``<patch>`` tags, fenced
``diff``/``patch`` blocks, or a bare unified diff in prose), with the diff model of
:mod:`orchestrator.diffs.diff`. Patches keep their line endings (CRLF stays CRLF); a patch
always ends with a newline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from orchestrator.diffs.diff import bare, looks_like_diff, scan

# structured answer keys that may hold the patch, in order of preference
PATCH_KEYS = ("patch", "model_patch", "diff")
# fence languages that announce a diff
DIFF_LANGUAGES = {"diff", "patch", "udiff", "git-diff", "gitdiff"}

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_PATCH_TAG = re.compile(r"<patch>(.*?)(?:</patch>|\Z)", re.DOTALL | re.IGNORECASE)


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
        diffs = [_tidy(block) for block in blocks if looks_like_diff(block)]
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
        opening = _FENCE_OPEN.match(bare(lines[i]))
        if not opening:
            i += 1
            continue
        indent, fence, language = len(opening[1]), opening[2], opening[3]
        body: list[str] = []
        i += 1
        while i < len(lines):
            line_text = bare(lines[i])
            stripped = line_text.strip()
            closes = stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0])
            # a diff line " ```" (context) must not close a fence opened at column 0
            if closes and len(line_text) - len(line_text.lstrip(" ")) <= indent:
                break
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            i += 1
        i += 1
        yield language, "".join(body)


def _bare_diffs(text: str) -> list[str]:
    """Runs of diff lines in prose: from a file header to the first line no diff can hold."""
    blocks: list[str] = []
    current: list[str] = []
    for line in scan(text.splitlines(keepends=True)):
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
    scanned = list(scan(lines))
    while scanned and scanned[-1].kind == "other" and not scanned[-1].text.strip():
        scanned.pop()
    text = "".join(line.text for line in scanned)
    if text and not text.endswith("\n"):
        text += "\r\n" if "\r\n" in text else "\n"
    return text
