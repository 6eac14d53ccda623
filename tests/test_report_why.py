"""Reports that say why: every instance not resolved with its first failing tests or its
error, causes that keep their distinguishing words, — where tests did not run, a header that
says when, how long, what and where; the comparison's verdict first; the HTML at 800 px."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report import (
    compare_runs,
    normalise_message,
    not_resolved,
    render_html,
    render_text,
    triage,
    write_html,
)
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import InstanceResult, Reason, Status

from .cli_in_process import swe_green


def _result(iid: str, status: Status, reason: Reason = Reason.NONE, message: str = "", **tests):
    return InstanceResult(
        instance_id=iid, repo=iid.split("__")[0] + "/" + iid.split("__")[1].rsplit("-", 1)[0],
        status=status, reason=reason, message=message, tests=Groups(**tests),
        host="node-a", timings={"total": 30.0},
    )  # fmt: skip


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / "run-20260108-020000-abcdef12")
    run.write_config({
        "run_id": "run-20260108-020000-abcdef12", "participant": "http://agent:9019/",
        "participant_id": "my-agent", "version": "0.1.0", "host": "node-a",
        "settings": {"dataset": "/data/swe-bench-verified.jsonl"},
    })  # fmt: skip
    for result in [
        _result("a__ok-1", Status.RESOLVED, fail_to_pass_passed=["t1"]),
        _result("a__part-1", Status.PARTIALLY_RESOLVED, fail_to_pass_passed=["t1"],
                fail_to_pass_failed=["tests/test_x.py::test_two", "t3", "t4", "t5"]),
        _result("a__regr-1", Status.REGRESSION, fail_to_pass_passed=["t1"],
                pass_to_pass_failed=["tests/test_y.py::test_old"], pass_to_pass_passed=["p"]),
        _result("a__empty-1", Status.NO_OP, Reason.EMPTY_PATCH, "empty patch",
                fail_to_pass_failed=["t1"]),
        _result("b__down-1", Status.ERROR, Reason.PARTICIPANT_UNREACHABLE,
                "cannot reach the participant at http://127.0.0.1:9019/ (HTTP 500)\nmore"),
        _result("b__down-2", Status.ERROR, Reason.PARTICIPANT_UNREACHABLE,
                "cannot reach the participant at http://127.0.0.1:9019/ (HTTP 500)"),
        _result("b__env-1", Status.ERROR, Reason.ENVIRONMENT,
                "no recipe for astropy/astropy version '5.0'"),
        _result("b__env-2", Status.ERROR, Reason.ENVIRONMENT,
                "no recipe for sympy/sympy version '1.12'"),
    ]:  # fmt: skip
        run.write_result(result)
    return run


def _text(run: RunDir, width: int = 200) -> str:
    console = Console(record=True, width=width, color_system=None)
    console.print(render_text(run))
    return console.export_text()


def test_every_instance_not_resolved_is_listed_with_why(run: RunDir) -> None:
    rows = {row.instance_id: row for row in not_resolved(run.load_results())}
    assert set(rows) == {"a__part-1", "a__regr-1", "a__empty-1", "b__down-1", "b__down-2",
                         "b__env-1", "b__env-2"}  # fmt: skip
    assert rows["a__part-1"].why == (
        "FAIL_TO_PASS not passing: tests/test_x.py::test_two, t3, t4 (+1 more)"
    )
    assert rows["a__regr-1"].why == "PASS_TO_PASS broken: tests/test_y.py::test_old"
    assert rows["b__down-1"].why == (
        "cannot reach the participant at http://127.0.0.1:9019/ (HTTP 500)"
    )
    text = _text(run)
    section = text[text.index("Not resolved (7): why") :]
    assert "a__part-1" in section and "tests/test_x.py::test_two" in section
    assert "PASS_TO_PASS broken: tests/test_y.py::test_old" in section
    # the header: when, how long, what, who, where, which version
    assert re.search(
        r"started 2026-01-08 02:00 UTC · took [^·]+ · dataset /data/swe-bench-verified.jsonl · "
        r"participant my-agent \(http://agent:9019/\) · host\(s\) node-a · swe-green 0\.1\.0",
        text,
    ), text


def test_errors_by_cause_keep_what_tells_causes_apart(run: RunDir) -> None:
    rows = [(row.reason, row.message, row.instance_ids) for row in triage(run.load_results())]
    assert rows == [
        ("participant_unreachable",
         "cannot reach the participant at http://127.0.0.1:9019/ (HTTP 500)",
         ("b__down-1", "b__down-2")),
        ("environment", "no recipe for astropy/astropy version '5.0'", ("b__env-1",)),
        ("environment", "no recipe for sympy/sympy version '1.12'", ("b__env-2",)),
    ]  # fmt: skip
    # what differs per instance is folded: ids, hashes, numbers, deep paths
    assert normalise_message(
        "image of django__django-11099 (3f2a9c1d0e77) failed after 12 s in /srv/x/y"
    ) == normalise_message(
        "image of sympy__sympy-20590 (77aa99c1d0e3) failed after 95 s in /srv/z/w"
    )  # fmt: skip
    assert normalise_message("HTTP 502 from http://10.0.0.5:5000/v2/") != normalise_message(
        "HTTP 500 from http://10.0.0.5:5000/v2/"
    )
    assert normalise_message("needs Python 3.9") != normalise_message("needs Python 3.11")


def test_tests_not_run_show_a_dash_and_the_message_column_says_why(run: RunDir) -> None:
    page = render_html(run)

    def row(iid: str) -> str:
        found = re.search(rf'<tr id="i-{iid}".*?</tr>', page, re.S)
        assert found, iid
        return found.group(0)

    assert row("b__env-1").count(">—</td>") == 2  # fail→pass and pass→pass
    assert row("a__empty-1").count(">—</td>") == 2
    assert ">1/5</td>" in row("a__part-1") and "—" not in row("a__part-1")
    assert "FAIL_TO_PASS not passing: tests/test_x.py::test_two" in row("a__part-1")
    assert "PASS_TO_PASS broken: tests/test_y.py::test_old" in row("a__regr-1")
    assert "started 2026-01-08 02:00 UTC" in page and "swe-green 0.1.0" in page


def _cli(*args: str) -> subprocess.CompletedProcess:
    return swe_green(*args, columns=200)


def test_compare_output_starts_with_its_verdict(run: RunDir, tmp_path: Path) -> None:
    baseline = RunDir(tmp_path / "baseline")
    baseline.write_config({"run_id": "baseline"})
    baseline.write_result(_result("a__part-1", Status.RESOLVED, fail_to_pass_passed=["t1"]))
    worse = _cli("report", str(run.path), "--compare", str(baseline.path))
    assert worse.returncode == 1, worse.stderr
    assert worse.stdout.startswith("REGRESSED: 1 instance(s) no longer resolved"), worse.stdout
    same = _cli("report", str(run.path), "--compare", str(run.path))
    assert same.returncode == 0 and same.stdout.startswith("no regression"), same.stdout
    # two runs with nothing in common (yesterday's shard against today's) say so: exit 2
    other = RunDir(tmp_path / "other-shard")
    other.write_config({"run_id": "other-shard"})
    other.write_result(_result("c__else-1", Status.RESOLVED))
    apart = _cli("report", str(run.path), "--compare", str(other.path))
    assert apart.returncode == 2 and apart.stdout.startswith("NOTHING TO COMPARE"), apart.stdout
    html = Path(write_html(run, compare_runs(run, baseline))).read_text()
    assert html.index('id="verdict"') < html.index('id="leaderboard"')


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed")
def test_the_html_report_is_readable_at_800_px(run: RunDir, tmp_path: Path) -> None:
    page = write_html(run)
    # the test's own probe: how wide the page lays out in an 800 px window
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text().replace(
            "</body>",
            "<script>document.body.setAttribute('data-width', "
            "document.documentElement.scrollWidth)</script></body>",
        )
    )
    dom = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=800,1000", "--dump-dom",
         probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    width = re.search(r'data-width="(\d+)"', dom)
    assert width, dom[:500]
    assert int(width.group(1)) <= 800, width.group(1)
    assert "tests/test_x.py::test_two" in dom
