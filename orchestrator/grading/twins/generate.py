"""Candidate twins from the test files as the test patch leaves them (pure functions but
for the random draws of :mod:`.natural`).

For each FAIL_TO_PASS test: its function (:mod:`.locate`), the places where it states an
expected value and the edits that change one (:mod:`.sites`): a value drawn at random from
the files' own literals and words or moved by a random offset in its own rounding
(:mod:`.natural`), the fixed edits of :mod:`.mutate` only where nothing natural fits. The
places are ranked, the most natural first: a literal expected side before an exception's
class or message, before a constant inside a computed expression; one edit per assertion
before a second edit of the same assertion; assertions on lines the test patch adds before
the others. A test that states no value at all gets, as the last resort, its assertion
turned around (kind ``truth``: ``assert not x`` for ``assert x``). The twin test patch is
the instance's test patch with the mutated files' sections made anew."""

from __future__ import annotations

import ast
import difflib
import random
import re
from collections.abc import Iterator, Mapping, Sequence

from orchestrator.diffs.diff import GIT_STARTS, Patch, bare
from orchestrator.grading.twins.locate import Located, locate, parse_files
from orchestrator.grading.twins.model import Twin, TwinCandidates
from orchestrator.grading.twins.natural import Natural, Vocabulary
from orchestrator.grading.twins.params import case_values
from orchestrator.grading.twins.sites import Edit, Sites, Source
from orchestrator.models import Instance

NO_ASSERTION = "no assertion with an expected value"
COMPUTED = "expected value is computed, not a literal"
PARAMETER = "expected value is a parameter"
TOO_DEEP = "an expression too deeply nested to read"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def twin_candidates(
    instance: Instance, files: Mapping[str, str], *, per_test: int = 3,
    rng: random.Random | None = None, natural: bool = True,
) -> TwinCandidates:  # fmt: skip
    """Up to ``per_test`` candidate twins for each FAIL_TO_PASS test of ``instance``;
    ``files`` maps each file the test patch touches (repository-relative path) to its text
    after the test patch. The changed values are drawn by ``rng`` (``random.SystemRandom``:
    no seed for a participant to know) from the files' own literals and words
    (:mod:`.natural`); ``natural=False``: the fixed edits of :mod:`.mutate` alone."""
    trees = parse_files(files)
    sources = {path: Source(text) for path, text in files.items() if path in trees}
    drawer = None
    if natural:
        floats = {
            id(node): sources[path].segment(node)
            for path, tree in trees.items() if tree is not None
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, float)
        }  # fmt: skip
        drawer = Natural(Vocabulary.of(trees.values(), floats), rng or random.SystemRandom())
    added = added_lines(instance.test_patch)
    result = TwinCandidates()
    for name in instance.FAIL_TO_PASS:
        found = locate(name, trees)
        if isinstance(found, str):
            result.missing[name] = found
            continue
        try:
            twins = _twins(name, found, sources, trees, added, per_test, drawer)
        except RecursionError:  # an expression nested deeper than the interpreter's stack
            result.missing[name] = TOO_DEEP
            continue
        if twins:
            result.by_test[name] = twins
        else:
            result.missing[name] = _why_none(found)
    return result


def _twins(
    name: str, found: list[Located], sources: Mapping[str, Source],
    trees: Mapping[str, ast.Module | None], added: Mapping[str, set[int]], per_test: int,
    drawer: Natural | None,
) -> list[Twin]:  # fmt: skip
    """The best candidates of each function ``name`` runs, taken from each in turn (the copy
    with the best candidate first): where a name runs in several files and the log reports
    it once (sympy), only the copy reported last decides its outcome, and validation keeps
    the twins of that copy."""
    per_copy: list[list[tuple[tuple[int, int, int, int], Twin]]] = []
    for where in found:
        source = sources[where.path]
        lines = added.get(where.path, set())
        nth: dict[int, int] = {}
        cases = case_values(where.node, name, trees.get(where.path))
        ranked: list[tuple[tuple[int, int, int, int], Twin]] = []
        for edit in Sites(where.node, source, cases, drawer).edits:
            twin = _twin(name, where, source, edit)
            rank_in_site = nth.get(edit.site, 0)
            nth[edit.site] = rank_in_site + 1
            fresh = 0 if twin.line in lines else 1
            ranked.append(((rank_in_site, edit.tier, fresh, len(ranked)), twin))
        if ranked:
            per_copy.append(sorted(ranked, key=lambda pair: pair[0]))
    per_copy.sort(key=lambda ranked: ranked[0][0][:3])
    chosen: list[Twin] = []
    seen: set[tuple[str, int, int, str]] = set()
    for twin in _in_turn([[twin for _, twin in ranked] for ranked in per_copy]):
        key = (twin.path, twin.start, twin.end, twin.replacement)
        if key not in seen:
            seen.add(key)
            chosen.append(twin)
    return chosen[:per_test]


def _in_turn(lists: Sequence[Sequence[Twin]]) -> Iterator[Twin]:
    """The first of each list, then the second of each, and so on."""
    for rank in range(max(map(len, lists), default=0)):
        yield from (each[rank] for each in lists if rank < len(each))


def _twin(name: str, where: Located, source: Source, edit: Edit) -> Twin:
    start, end = edit.span or source.span(edit.node)
    first, last = source.line_of(start), source.line_of(end)
    region_start = source.starts[first - 1]
    region_end = source.starts[last - 1] + len(source.lines[last - 1])
    original = source.text[region_start:region_end]
    mutated = original[: start - region_start] + edit.text + original[end - region_start :]
    return Twin(
        test=name, path=where.path, line=first, start=start, end=end, replacement=edit.text,
        original=original, mutated=mutated, kind=edit.kind, function=where.qualname,
    )  # fmt: skip


def _why_none(found: list[Located]) -> str:
    reason = NO_ASSERTION
    for where in found:
        params = {a.arg for a in where.node.args.args}
        for node in ast.walk(where.node):
            compared: list[ast.expr] = []
            if isinstance(node, ast.Compare):
                compared = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and _called(node).startswith("assert"):
                compared = node.args[1:2]  # (actual, expected)
            if any(isinstance(side, ast.Name) and side.id in params for side in compared):
                return PARAMETER
            if isinstance(node, ast.Assert) or (
                isinstance(node, ast.Call) and _called(node).startswith("assert")
            ):
                reason = COMPUTED
    return reason


def _called(call: ast.Call) -> str:
    func = call.func
    return (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else ""
    )


def added_lines(test_patch: str) -> dict[str, set[int]]:
    """The line numbers (in the file after the patch) of the lines ``test_patch`` adds."""
    out: dict[str, set[int]] = {}
    for section in Patch.parse(test_patch, GIT_STARTS).files:
        if section.new is None:
            continue
        lines = out.setdefault(section.new, set())
        number = 0
        in_hunk = False
        for line in section.text.splitlines():
            if match := _HUNK.match(line):
                number, in_hunk = int(match.group(1)), True
            elif in_hunk and line.startswith("+"):
                lines.add(number)
                number += 1
            elif in_hunk and line.startswith(" "):
                number += 1
    return out


def apply_twins(files: Mapping[str, str], twins: Sequence[Twin]) -> dict[str, str]:
    """``files`` with every twin's segment replaced (at most one twin per test function; the
    same edit twice counts once).

    Raises ValueError when two twins overlap or a twin's segment is not the text it was
    made from (another file)."""
    out = dict(files)
    by_path: dict[str, list[Twin]] = {}
    for twin in twins:
        by_path.setdefault(twin.path, []).append(twin)
    for path, group in by_path.items():
        if path not in out:
            raise ValueError(f"twin of {twin_label(group[0])}: {path} is not among the files")
        text = out[path]
        # the same edit named by two tests (two ids of one parametrized function) is one edit
        unique = {(t.start, t.end, t.replacement): t for t in group}
        group = sorted(unique.values(), key=lambda t: (t.start, t.end))
        for before, after in zip(group, group[1:], strict=False):
            if after.start < before.end or (after.start == before.end == after.end):
                raise ValueError(
                    f"twins overlap in {path}: {twin_label(before)} and {twin_label(after)}"
                )
        for twin in group:  # each against the text it was made from (two may share a line)
            if not _matches(text, twin):
                raise ValueError(f"twin of {twin_label(twin)} does not match {path}")
        for twin in reversed(group):
            text = text[: twin.start] + twin.replacement + text[twin.end :]
        out[path] = text
    return out


def _matches(text: str, twin: Twin) -> bool:
    """The twin's lines are in ``text`` where it says and its segment lies within them."""
    starts = Source(text).starts
    if not 1 <= twin.line <= len(starts):
        return False
    region = starts[twin.line - 1]
    return text[
        region : region + len(twin.original)
    ] == twin.original and region <= twin.start <= twin.end <= region + len(twin.original)


def twin_label(twin: Twin) -> str:
    return f"{twin.test} ({twin.path}:{twin.line})"


def twin_test_patch(
    test_patch: str, base_files: Mapping[str, str | None], twins: Sequence[Twin],
    files: Mapping[str, str],
) -> str:  # fmt: skip
    """A patch that ``git apply`` takes at the base commit, as it takes ``test_patch``, and
    that leaves the files of ``apply_twins(files, twins)``; ``base_files`` are the files'
    texts at the base commit (None: the test patch creates it)."""
    mutated = apply_twins(files, twins)
    changed = {twin.path for twin in twins}
    parsed = Patch.parse(test_patch, GIT_STARTS)
    parts = [parsed.preamble]
    done: set[str] = set()
    for section in parsed.files:
        path = section.new
        if path is None or path not in changed:
            parts.append(section.text)
            continue
        old_path = section.old
        base = base_files.get(old_path) if old_path is not None else None
        if old_path is not None and old_path not in base_files:
            base = base_files.get(path)
        parts.append(_section(section.text, old_path, path, base, mutated[path]))
        done.add(path)
    if changed - done:
        raise ValueError(f"the test patch does not change {', '.join(sorted(changed - done))}")
    return "".join(parts)


def _section(original: str, old: str | None, new: str, base: str | None, text: str) -> str:
    """A file's section made anew: the original's git header lines (modes, renames; no
    ``index`` line, whose hashes no longer hold), then a unified diff of base -> text."""
    lines = original.splitlines(keepends=True)
    header = [lines[0]]
    for line in lines[1:]:
        stripped = bare(line)
        if stripped.startswith(("--- ", "+++ ", "@@ ")):
            break
        if not stripped.startswith("index "):
            header.append(line)
    old_name = f"a/{old}" if old is not None and base is not None else "/dev/null"
    body = difflib.unified_diff(
        _lines(base or ""), _lines(text), fromfile=old_name, tofile=f"b/{new}", lineterm="\n"
    )
    out = []
    for line in body:
        if line.startswith(("---", "+++")):
            out.append(line if line.endswith("\n") else line + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(header) + "".join(out)


def _lines(text: str) -> list[str]:
    """Lines cut at ``\\n`` only (a ``\\r`` or form feed stays inside its line, as in git)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
