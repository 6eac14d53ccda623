"""Run reports: rich text, and the HTML page checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.models import TestGroups as Groups
from orchestrator.report import REPORT_FILE, print_report, render_html, render_text, write_html
from orchestrator.results import RunDir

# (instance id, repo, status, F passed/failed, P passed/failed, seconds, tool calls)
ROWS = [
    ("astropy__astropy-12907", "astropy/astropy", Status.REGRESSION, (0, 1), (3, 2), 40.0, 12),
    ("django__django-11099", "django/django", Status.RESOLVED, (2, 0), (5, 0), 300.0, 30),
    ("django__django-11133", "django/django", Status.ERROR, (0, 0), (0, 0), 5.0, 0),
    ("django__django-11179", "django/django", Status.RESOLVED, (1, 0), (0, 0), 95.5, 8),
    ("sympy__sympy-20590", "", Status.PARTIALLY_RESOLVED, (1, 1), (4, 0), 3725.0, 99),
    ("sympy__sympy-13480", "sympy/sympy", Status.NO_OP, (0, 1), (4, 0), 61.0, 1),
]


def _groups(f: tuple[int, int], p: tuple[int, int]) -> Groups:
    return Groups(
        fail_to_pass_passed=[f"f{i}" for i in range(f[0])],
        fail_to_pass_failed=[f"g{i}" for i in range(f[1])],
        pass_to_pass_passed=[f"p{i}" for i in range(p[0])],
        pass_to_pass_failed=[f"q{i}" for i in range(p[1])],
    )


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / "run-2024")
    run.write_config(
        {"participant_id": "demo-agent", "concurrency": 2, "anthropic_api_key": "sk-secret"}
    )
    for instance_id, repo, status, f, p, seconds, calls in ROWS:
        run.write_result(
            InstanceResult(
                instance_id=instance_id,
                repo=repo,
                status=status,
                reason=Reason.ENVIRONMENT if status == Status.ERROR else Reason.NONE,
                message="<script>alert(1)</script> & more" if status == Status.ERROR else "",
                tests=_groups(f, p),
                timings={"setup": seconds / 2, "tests": seconds / 2},
                tool_calls=calls,
                apply_strategy="git apply" if status != Status.ERROR else None,
            )
        )
    run.write_text("django__django-11099", "patch.diff", "diff --git a/x b/x\n")
    run.write_text("django__django-11099", "transcript.jsonl", "{}\n")
    run.write_text("django__django-11099", "test_output.txt", "ok\n")
    run.write_text("django__django-11133", "setup.log", "failed\n")
    return run


def _text(run: RunDir) -> str:
    console = Console(record=True, width=160, color_system=None)
    console.print(render_text(run, slowest=3))
    return console.export_text()


def test_render_text(run: RunDir) -> None:
    text = _text(run)
    # leaderboard row: 2 of 6 resolved, 1 error
    assert "33.33%" in text and "16.67%" in text
    assert re.search(r"resolved\s+│\s+2\s+│\s+33\.33%", text)
    assert re.search(r"no_op\s+│\s+1\s+│\s+16\.67%", text)
    # repositories, including one derived from the instance id
    assert re.search(r"django/django\s+│\s+3\s+│\s+2\s+│\s+66\.67%", text)
    assert re.search(r"sympy/sympy\s+│\s+2\s+│\s+0\s+│\s+0\.00%", text)
    # slowest three, slowest first
    slow = text[text.index("Slowest 3") :]
    order = [slow.index(i) for i in ("sympy__sympy-20590", "django__django-11099")]
    assert order == sorted(order)
    assert "1h 02m" in slow and "5m 00s" in slow and "1m 35s" in slow
    assert "astropy__astropy-12907" not in slow


def test_render_text_of_an_empty_run(tmp_path: Path) -> None:
    console = Console(record=True, width=120, color_system=None)
    print_report(tmp_path / "empty", console=console)
    text = console.export_text()
    assert "No instance results" in text and "0.00%" in text


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[str] = []
        self.links: list[str] = []
        self.resources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "tr" and values.get("data-instance"):
            self.rows.append(values["data-instance"] or "")
        if tag == "a":
            self.links.append(values.get("href") or "")
        for name in ("src", "href"):
            if values.get(name):
                self.resources.append(values[name] or "")


def test_render_html_is_self_contained(run: RunDir) -> None:
    page = render_html(run)
    collected = _Collector()
    collected.feed(page)
    assert collected.rows == sorted(row[0] for row in ROWS)
    assert not any(re.match(r"^[a-z]+:", url) for url in collected.resources)
    assert "http" not in page and "<link" not in page and "@import" not in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp;" in page
    assert "sk-secret" not in page and "demo-agent" in page
    assert "<svg" in page and 'data-status="resolved"' in page
    # links only to files that exist, relative to the run directory
    assert set(collected.links) == {
        "instances/django__django-11099/result.json",
        "instances/django__django-11099/patch.diff",
        "instances/django__django-11099/transcript.jsonl",
        "instances/django__django-11099/test_output.txt",
        "instances/django__django-11133/setup.log",
        *(f"instances/{row[0]}/result.json" for row in ROWS),
    }
    for link in collected.links:
        assert (run.path / link).is_file()


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _dump_dom(page: Path, fragment: str, profile: Path) -> str:
    binary = _chromium()
    assert binary
    run = subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.as_uri() + fragment,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return run.stdout


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_html_renders_and_sorts_in_chromium(run: RunDir, tmp_path: Path) -> None:
    page = write_html(run)
    assert page == run.path / REPORT_FILE

    def rows(dom: str) -> list[str]:
        collected = _Collector()
        collected.feed(dom)
        return collected.rows

    dom = _dump_dom(page, "", tmp_path / "profile")
    assert rows(dom) == sorted(row[0] for row in ROWS)
    assert "data-sorted-by" not in dom and not re.search(r"<th[^>]*aria-sort", dom)

    by_status = rows(_dump_dom(page, "#sort=status", tmp_path / "profile"))
    status_order = list(Status)
    expected = sorted(ROWS, key=lambda row: (status_order.index(row[2]), row[0]))
    assert by_status == [row[0] for row in expected]

    dom = _dump_dom(page, "#sort=-duration", tmp_path / "profile")
    assert rows(dom) == [row[0] for row in sorted(ROWS, key=lambda row: -row[5])]
    assert 'data-sorted-by="-duration"' in dom
    assert re.search(r'<th data-key="duration"[^>]*aria-sort="descending"', dom)

    by_calls = rows(_dump_dom(page, "#sort=tool_calls", tmp_path / "profile"))
    assert by_calls == [row[0] for row in sorted(ROWS, key=lambda row: row[6])]


def test_suspicious_results_are_flagged_in_both_reports(run: RunDir) -> None:
    run.write_result(
        InstanceResult(
            instance_id="demo__calc-1",
            repo="demo/calc",
            status=Status.RESOLVED,
            tests=_groups((2, 0), (5, 0)),
            suspicious=["exits the process with os._exit: calc/__init__.py"],
        )
    )
    text = _text(run)
    flagged = text[text.index("Suspicious") :]
    assert "demo__calc-1" in flagged and "os._exit: calc/__init__.py" in flagged
    html = Path(write_html(run)).read_text()
    assert 'class="suspicious" title="exits the process with os._exit: calc/__init__.py"' in html
    assert html.count('class="suspicious"') == 1
    assert "Suspicious" not in _text(RunDir(run.path.parent / "none"))
