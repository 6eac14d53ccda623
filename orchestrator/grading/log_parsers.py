"""Per-test outcomes from a test runner's output, one parser per SWE-bench log format.

The names produced are in the notation of the dataset's FAIL_TO_PASS / PASS_TO_PASS lists
(SWE-bench 4.1's ``log_parsers``), with three deliberate differences:

* pytest ids are kept verbatim, spaces and all (SWE-bench cut them at the first space, which
  is why some dataset ids are truncated inside ``[...]``; :func:`match_expected` bridges that);
* when the output reports one test several times, a failing report beats a passing one
  (SWE-bench keeps the last line). A test that errors in teardown after passing is a failure,
  and a line such as ``PASSED tests/x.py::test_a`` printed by the code under test cannot
  hide the runner's own ``FAILED`` line for that test;
* outcomes SWE-bench drops are kept where they map cleanly (django ``expected failure`` is
  XFAIL, pytest ``XPASS`` is PASSED, sympy ``f`` is XFAIL).

The eval script's markers around the test output are in :mod:`.markers`; the runner's own
summary lines (the forged-output check) in :mod:`.runner_summary`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from orchestrator.models import CaseStatus

LOG_FORMATS = (
    "pytest",
    "pytest_options",
    "pytest_v2",
    "django",
    "sympy",
    "seaborn",
    "matplotlib",
)

Event = tuple[str, CaseStatus]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# control characters other than tab and newline (SWE-bench's pytest_v2 strips them too)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# A failing report outranks a passing one when a test is reported more than once.
_RANK = {
    CaseStatus.PASSED: 0,
    CaseStatus.XFAIL: 0,
    CaseStatus.SKIPPED: 1,
    CaseStatus.FAILED: 2,
    CaseStatus.ERROR: 2,
}

PASSING = frozenset({CaseStatus.PASSED, CaseStatus.XFAIL})
FAILING = frozenset({CaseStatus.FAILED, CaseStatus.ERROR})


# --------------------------------------------------------------------------- helpers


def clean_line(line: str) -> str:
    """A line without ANSI colour codes, other control characters or trailing blanks."""
    return _CONTROL.sub("", _ANSI.sub("", line)).rstrip()


def output_lines(text: str) -> Iterator[str]:
    for raw in text.splitlines():
        yield clean_line(raw)


def _fold(events: Iterable[Event]) -> dict[str, CaseStatus]:
    """One outcome per test. Reports that disagree make the test fail: a failing report wins,
    and a pass next to a skip or an expected failure is a FAILED (a test has one outcome;
    two different ones mean that something other than the runner printed one)."""
    outcomes: dict[str, CaseStatus] = {}
    for name, status in events:
        old = outcomes.get(name)
        if old is None or old == status:
            outcomes[name] = status
        elif _RANK[status] == 2 or _RANK[old] == 2:
            outcomes[name] = status if _RANK[status] >= _RANK[old] else old
        else:
            outcomes[name] = CaseStatus.FAILED
    return outcomes


# --------------------------------------------------------------------------- pytest

_PYTEST_STATUS = {
    "PASSED": CaseStatus.PASSED,
    "FAILED": CaseStatus.FAILED,
    "ERROR": CaseStatus.ERROR,
    "SKIPPED": CaseStatus.SKIPPED,
    "XFAIL": CaseStatus.XFAIL,
    "XPASS": CaseStatus.PASSED,
}
_STATUS_WORDS = "|".join(_PYTEST_STATUS)
# ``STATUS id`` (the -rA short summary): the id is everything up to a whitespace outside
# its ``[...]`` part; what follows (`` - message``, an xpass reason) is not part of it.
# ``[100%]`` is kept as a name because two dataset PASS_TO_PASS lists hold it.
STATUS_FIRST = re.compile(
    rf"^({_STATUS_WORDS})\s+((?P<id>[^\s\[]+)(?:\[.*?\](?=\s|$))?|\[\d+%\](?=\s|$))"
)
# ``id STATUS`` or ``id STATUS [ 42%]`` (-v output); the id contains ``::``.
_STATUS_AFTER = re.compile(
    rf"^(?P<name>[^\s\[]*::\S.*?)\s+(?P<status>{_STATUS_WORDS})(?:\s+\[\s*\d+%\])?$"
)
_OPTION = re.compile(r"(.*?)\[(.*)\]")


def _shorten_option(name: str) -> str:
    """SWE-bench's pytest_options naming: an absolute-path parameter keeps its last part."""
    match = _OPTION.search(name)
    if not match:
        return name
    main, option = match.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def _pytest_events(
    text: str,
    *,
    status_after_name: bool,
    rename: Callable[[str], str] = lambda name: name,
    rewrite_line: Callable[[str], str] = lambda line: line,
) -> Iterator[Event]:
    for line in output_lines(text):
        line = rewrite_line(line)
        match = STATUS_FIRST.match(line)
        if match:
            # a test id has ``::`` or names a file (collection errors); captured log lines
            # such as ``ERROR    module:file.py:12 message`` do not
            base = match["id"]
            if base is None or "::" in base or base.endswith(".py"):
                yield rename(match.group(2)), _PYTEST_STATUS[match.group(1)]
            continue
        if status_after_name:
            match = _STATUS_AFTER.match(line)
            if match:
                yield rename(match["name"]), _PYTEST_STATUS[match["status"]]


def _matplotlib_line(line: str) -> str:
    return line.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3")


# --------------------------------------------------------------------------- django

_DJANGO_STATUS = {
    "ok": CaseStatus.PASSED,
    "OK": CaseStatus.PASSED,
    "FAIL": CaseStatus.FAILED,
    "ERROR": CaseStatus.ERROR,
    "expected failure": CaseStatus.XFAIL,
    "unexpected success": CaseStatus.FAILED,
}
_DJANGO_RESULT = r"(?P<word>ok|OK|FAIL|ERROR|expected failure|unexpected success)|skipped(?:\s.*)?"
# ``<description> ... <result>``; the description is the longest prefix that leaves a result
DJANGO_LINE = re.compile(rf"^(?P<desc>.*) \.\.\.\s+(?:{_DJANGO_RESULT})$")
# a result on a line of its own, after the test's output; ``OK`` alone is the run's verdict
_DJANGO_BARE_RESULT = re.compile(
    r"^(?:(?P<word>ok|FAIL|ERROR|expected failure|unexpected success)|skipped(?:\s.*)?)$"
)
_DJANGO_TEST_ID = re.compile(r"^\w+ \([\w.]+\)$")
_DJANGO_HEADER = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>.+)$")
DJANGO_SUBTEST = re.compile(r"^(\w+ \([\w.]+\)) \(.*\)$")


def _django_result(match: re.Match[str]) -> CaseStatus:
    word = match["word"]
    return _DJANGO_STATUS[word] if word else CaseStatus.SKIPPED


def _django_names(description: str, previous_line: str) -> list[str]:
    """The names a ``<description> ... <result>`` line reports.

    The description is ``test_x (module.Class)``, or, for a test with a docstring, the
    docstring's first line with ``test_x (module.Class)`` alone on the line before (the
    dataset names such tests by the docstring line; both names are reported). Output that a
    previous step left on the line (``Applying x...test_y (m.C)``) is cut off.
    """
    names = [description]
    if "..." in description:
        names.append(description.rsplit("...", 1)[1].strip())
    if _DJANGO_TEST_ID.match(previous_line) and not _DJANGO_TEST_ID.match(description):
        names.append(previous_line)
    return [name for name in names if name]


def django_results(text: str) -> Iterator[tuple[list[str], CaseStatus, bool]]:
    """``(names, status, from_result_line)`` for each result; headers give ``False``."""
    previous = ""
    pending: list[str] = []  # a test whose result comes after its own output
    after_header: CaseStatus | None = None
    for line in output_lines(text):
        stripped = line.strip()
        if after_header is not None:
            # the line after ``FAIL: test_x (m.C)`` is the docstring's first line, if any
            if stripped and not stripped.startswith(("---", "===", "Traceback")):
                yield [stripped], after_header, False
            after_header = None
        if match := DJANGO_LINE.match(stripped):
            pending = []
            yield _django_names(match["desc"].strip(), previous), _django_result(match), True
        elif " ... " in stripped:
            pending = _django_names(stripped.split(" ... ", 1)[0].strip(), previous)
        elif pending and (match := _DJANGO_BARE_RESULT.match(stripped)):
            yield pending, _django_result(match), True
            pending = []
        elif match := _DJANGO_HEADER.match(stripped):
            status = CaseStatus.FAILED if match["kind"] == "FAIL" else CaseStatus.ERROR
            name = match["name"].strip()
            names = [name]
            if sub := DJANGO_SUBTEST.match(name):
                names.append(sub.group(1))
            yield names, status, False
            after_header = status
        if stripped:
            previous = stripped


def _django_events(text: str) -> Iterator[Event]:
    for names, status, _ in django_results(text):
        for name in names:
            yield name, status


# --------------------------------------------------------------------------- sympy

_SYMPY_STATUS = {
    "ok": CaseStatus.PASSED,
    "F": CaseStatus.FAILED,
    "E": CaseStatus.ERROR,
    "f": CaseStatus.XFAIL,
    "X": CaseStatus.FAILED,  # passed although expected to fail: sympy's run fails
    "s": CaseStatus.SKIPPED,
    "w": CaseStatus.SKIPPED,  # slow test, not run
    "T": CaseStatus.FAILED,  # timed out
    "K": CaseStatus.FAILED,  # interrupted
}
_SYMPY_FILE_TAIL = re.compile(r"\s*\[(?:OK|FAIL)\]$")
_SYMPY_TEST = re.compile(r"^(test_\w+)(?:\s+(.*))?$")
_SYMPY_HEADER = re.compile(r"^_{3,} \S+\.py:(test_\w+) _{3,}$")
# the start of a test file's results: ``sympy/core/tests/test_basic.py[8]`` (8 tests)
_SYMPY_SECTION = re.compile(r"^(\S+\.py)\[(\d+)\]")
# a line of the "slowest tests" list after the results (``test_x - Took 59.757 seconds``):
# no result, and no test whose result is still to come
_SYMPY_TIMING = re.compile(r"^test_\w+ - Took [\d.]+ seconds$")


def _sympy_status(rest: str) -> CaseStatus | None:
    words = rest.split()
    return _SYMPY_STATUS.get(words[-1]) if words else None


def sympy_results(text: str) -> Iterator[tuple[str, CaseStatus, bool]]:
    """``(name, status, from_result_line)``; failure report headers give ``False``."""
    for name, status, from_line, _ in _sympy_reports(text):
        yield name, status, from_line


def _sympy_reports(text: str) -> Iterator[tuple[str, CaseStatus, bool, str | None]]:
    """:func:`sympy_results` with the test file whose section reported each result (None
    when no ``path.py[N]`` line came before it, or for a failure report header)."""
    pending: str | None = None  # a test whose output came before its result
    from_headers: list[str] = []
    seen: set[str] = set()
    current: str | None = None
    for line in output_lines(text):
        stripped = _SYMPY_FILE_TAIL.sub("", line.strip())
        if section := _SYMPY_SECTION.match(stripped):
            current, pending = section.group(0), None
            continue
        if header := _SYMPY_HEADER.match(stripped):
            from_headers.append(header.group(1))
            continue
        if _SYMPY_TIMING.match(stripped):
            pending = None
            continue
        match = _SYMPY_TEST.match(stripped)
        if match:
            status = _sympy_status(match.group(2) or "")
            if status is None:
                pending = match.group(1)
            else:
                pending = None
                seen.add(match.group(1))
                yield match.group(1), status, True, current
        elif pending is not None and (status := _sympy_status(stripped)) is not None:
            seen.add(pending)
            yield pending, status, True, current
            pending = None
    # a failure report whose verbose line was lost in interleaved output
    for name in from_headers:
        if name not in seen:
            yield name, CaseStatus.FAILED, False, None


def _sympy_events(text: str) -> Iterator[Event]:
    for name, status, _ in sympy_results(text):
        yield name, status


def _sympy_fold(text: str) -> dict[str, CaseStatus]:
    """sympy's outcomes. sympy reports tests by name only, and one name may be a test in
    several files (``test_MatrixSymbol_printing`` in the str, latex and pretty printers'
    tests): reports of one name from different files' sections, each section holding no more
    results than its ``path.py[N]`` line announces, are different tests, and the last one
    stands for the dataset's name, as in the official parser. Any other conflict (two reports
    in one section, a section with more results than tests: a forged line) makes the test
    fail, as :func:`_fold` does."""
    reports = list(_sympy_reports(text))
    announced: dict[str, int] = {}
    counted: dict[str, int] = {}
    for line in output_lines(text):
        if section := _SYMPY_SECTION.match(_SYMPY_FILE_TAIL.sub("", line.strip())):
            announced[section.group(0)] = int(section.group(2))
    for _, _, from_line, where in reports:
        if from_line and where is not None:
            counted[where] = counted.get(where, 0) + 1
    clean = {where for where, n in counted.items() if n <= announced.get(where, 0)}
    by_name: dict[str, list[tuple[CaseStatus, str | None]]] = {}
    for name, status, _, where in reports:
        by_name.setdefault(name, []).append((status, where))
    outcomes = _fold((name, status) for name, status, _, _ in reports)
    for name, seen in by_name.items():
        files = [where for _, where in seen]
        if len(seen) > 1 and None not in files and len(set(files)) == len(files):
            if all(where in clean for where in files):
                outcomes[name] = seen[-1][0]
    return outcomes


def stricter_than_official(log_format: str, text: str) -> list[str]:
    """Tests whose outcome here differs from the official parser's (the last report of a
    name wins there): names reported with conflicting outcomes, which count as failing here."""
    ours = parse_test_log(log_format, text)
    last: dict[str, CaseStatus] = {}
    for name, status in _events(log_format, text):
        last[name] = status
    return sorted(
        name
        for name, status in ours.items()
        if name in last and (status in PASSING) != (last[name] in PASSING)
    )


# --------------------------------------------------------------------------- public


def _events(log_format: str, text: str) -> Iterator[Event]:
    match log_format:
        case "pytest":
            return _pytest_events(text, status_after_name=False)
        case "pytest_options":
            return _pytest_events(text, status_after_name=False, rename=_shorten_option)
        case "pytest_v2" | "seaborn":
            return _pytest_events(text, status_after_name=True)
        case "matplotlib":
            return _pytest_events(text, status_after_name=False, rewrite_line=_matplotlib_line)
        case "django":
            return _django_events(text)
        case "sympy":
            return _sympy_events(text)
    raise ValueError(f"unknown log format {log_format!r}; known: {', '.join(LOG_FORMATS)}")


def parse_test_log(log_format: str, text: str) -> dict[str, CaseStatus]:
    """Each test's outcome in ``text``, the output of a ``log_format`` test runner."""
    if log_format == "sympy":
        return _sympy_fold(text)
    return _fold(_events(log_format, text))


def is_truncated(name: str) -> bool:
    """True for a dataset id cut inside its ``[...]`` parameter (SWE-bench split on spaces)."""
    return name.count("[") > name.count("]")


def match_expected(
    expected: list[str], outcomes: dict[str, CaseStatus]
) -> dict[str, CaseStatus | None]:
    """The outcome of each expected test name; ``None`` when the output does not report it.

    Exact names first. A dataset id truncated inside ``[...]`` stands for every reported id
    that continues it after whitespace; it gets their outcome when they all agree, else
    ``None``.
    """
    result: dict[str, CaseStatus | None] = {}
    for name in expected:
        if name in outcomes:
            result[name] = outcomes[name]
            continue
        result[name] = None
        if is_truncated(name):
            statuses = {
                status
                for candidate, status in outcomes.items()
                if candidate.startswith(name) and candidate[len(name) : len(name) + 1].isspace()
            }
            if len(statuses) == 1:
                result[name] = statuses.pop()
    return result
