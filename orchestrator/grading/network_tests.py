"""Which failed tests failed because the internet was out of reach (pure).

Tests run with the network off. Some old FAIL_TO_PASS tests call a public service by name
(requests 2.4's ``test_requests_history_is_saved`` fetches ``https://httpbin.org``): they fail
here even with the gold patch, and no environment without the internet can make them pass.
Environment validation leaves such a test out of the instance's grading when pytest's own
failure report for it shows the network out of reach (name resolution failed, network
unreachable), the instance keeps at least one FAIL_TO_PASS test that passes with the gold
patch, and the report lists every such test. Any other failure keeps the instance invalid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from orchestrator.grading.log_parsers import clean_line
from orchestrator.network_errors import NETWORK_ERROR

# pytest's header of one test's failure report: ``____ Class.test_name[param] ____``
_HEADER = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
_SECTION_END = re.compile(r"^=+ .* =+$")
PYTEST_FORMATS = frozenset({"pytest", "pytest_options", "pytest_v2", "seaborn"})


def failure_reports(output: str) -> dict[str, str]:
    """pytest's failure reports in ``output``, by their header's title."""
    reports: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in output.splitlines():
        line = clean_line(raw)
        header = _HEADER.match(line)
        if header:
            current = reports.setdefault(header.group("title"), [])
        elif _SECTION_END.match(line):
            current = None
        elif current is not None:
            current.append(line)
    return {title: "\n".join(lines) for title, lines in reports.items()}


def _title(node_id: str) -> str:
    """The header pytest gives a node id's report: ``a.py::Cls::test_x`` -> ``Cls.test_x``."""
    return ".".join(node_id.split("::")[1:]) or node_id


def network_failures(log_format: str, output: str, failed: Iterable[str]) -> list[str]:
    """Of the ``failed`` tests (node ids), those whose failure report shows the network out of
    reach. Only pytest's reports are read; for other runners nothing is recognised."""
    if log_format not in PYTEST_FORMATS:
        return []
    reports = failure_reports(output)
    found = []
    for name in failed:
        title = _title(name)
        text = reports.get(title) or reports.get(f"ERROR at setup of {title}", "")
        if NETWORK_ERROR.search(text):
            found.append(name)
    return found
