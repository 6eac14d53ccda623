"""Run reports: rich text, and the HTML page checked in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report import (
    REPORT_FILE,
    compare,
    compare_runs,
    normalise_message,
    print_report,
    render_comparison,
    render_html,
    render_text,
    triage,
    write_html,
)
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import InstanceResult, Reason, Status

from .cli_in_process import swe_green

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
    assert 'id="status-chart"' in page and 'data-status="resolved"' in page
    # links only to files that exist, relative to the run directory
    assert set(link for link in collected.links if not link.startswith("#")) == {
        "instances/django__django-11099/result.json",
        "instances/django__django-11099/patch.diff",
        "instances/django__django-11099/transcript.jsonl",
        "instances/django__django-11099/test_output.txt",
        "instances/django__django-11133/setup.log",
        *(f"instances/{row[0]}/result.json" for row in ROWS),
    }
    for link in collected.links:
        if link.startswith("#"):  # errors by cause link to the instances' rows
            assert f'id="{link[1:]}"' in page
        else:
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


_WHY_IN_VIEW = """JSON.stringify({
  scroll: document.documentElement.scrollWidth, inner: innerWidth,
  table: (t => t.scrollWidth - t.clientWidth)(document.getElementById("instances")),
  why: Array.from(document.querySelectorAll("#instances td.message"), td => {
    const box = td.getBoundingClientRect();
    return {left: box.left, right: box.right, width: box.width, text: td.textContent};
  })})"""


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_html_keeps_the_why_column_in_view_at_800_and_1280_pixels(
    run: RunDir, tmp_path: Path
) -> None:
    from .headless import Browser

    page = write_html(run)
    with Browser(tmp_path / "profile") as browser:
        for width in (800, 1280, 390):
            browser.open(page.as_uri(), width)
            seen = json.loads(browser.evaluate(_WHY_IN_VIEW))
            assert seen["scroll"] <= seen["inner"] == width, (width, seen)  # no sideways scroll
            assert seen["table"] <= 0, (width, seen)  # nor inside the table
            assert len(seen["why"]) == len(ROWS)
            for cell in seen["why"]:
                # every "why" cell on screen, wide enough to read
                assert 0 <= cell["left"] and cell["right"] <= width, (width, cell)
                assert cell["width"] >= min(180, width / 3) or not cell["text"], (width, cell)
            errors = [c for c in seen["why"] if "alert(1)" in c["text"]]
            assert errors and errors[0]["width"] > 0


# --------------------------------------------------------------------------- triage


def _result(instance_id: str, status: Status, reason: Reason = Reason.NONE, message: str = ""):
    return InstanceResult(
        instance_id=instance_id, repo="", status=status, reason=reason, message=message
    )


def test_normalise_message_collapses_numbers_paths_and_hashes() -> None:
    a = normalise_message(
        "\n  install command: editable mode requires setup.py (/testbed/pkg 3.2, exit 1)\nmore"
    )
    assert a == "install command: editable mode requires setup.py (<path> <n>, exit <n>)"
    b = normalise_message("install command: editable mode requires setup.py (/srv/x/y 10, exit 2)")
    assert a == b
    assert normalise_message("container 3f2a9c1d0e77 gone after 12.5s at 0x7f3a") == (
        "container <hash> gone after <n>s at <hex>"
    )
    assert normalise_message("tests in astropy/io/fits failed") == "tests in <path> failed"
    # words are not hashes, and ordinary words with digits stay readable
    assert normalise_message("deadbeef feedface py3 failed") == "deadbeef feedface py3 failed"
    assert len(normalise_message("x" * 500)) == 160


def test_triage_makes_one_root_cause_one_row() -> None:
    results = [
        _result(f"django__django-{n}", Status.ERROR, Reason.ENVIRONMENT,
                f"install command: editable mode requires setup.py (/testbed/{n}, exit {n % 3})")
        for n in range(12)
    ] + [
        _result("a__b-1", Status.ERROR, Reason.PARTICIPANT_TIMEOUT, "no answer in 3600s"),
        _result("a__b-2", Status.ERROR, Reason.PARTICIPANT_TIMEOUT, "no answer in 3601s"),
        _result("a__b-3", Status.ERROR, Reason.ENVIRONMENT, "base commit: git failed"),
        _result("a__b-4", Status.NO_OP, Reason.EMPTY_PATCH, "empty patch"),
    ]  # fmt: skip
    rows = triage(results)
    assert [(row.count, row.reason) for row in rows] == [
        (12, "environment"), (2, "participant_timeout"), (1, "environment"),
    ]  # fmt: skip
    assert rows[0].message == "install command: editable mode requires setup.py (<path>, exit <n>)"
    assert rows[0].instance_ids == tuple(sorted(f"django__django-{n}" for n in range(12)))
    assert rows[1].instance_ids == ("a__b-1", "a__b-2")


def test_report_shows_errors_by_cause(run: RunDir) -> None:
    run.write_result(
        _result("django__django-11200", Status.ERROR, Reason.ENVIRONMENT,
                "<script>alert(2)</script> & more")
    )  # fmt: skip
    text = _text(run)
    assert "Errors by cause" in text
    assert re.search(
        r"│\s+2\s+│\s+environment\s+│.*django__django-11133, django__django-11200", text
    )
    page = render_html(run)
    row = re.search(r'<table id="triage"[^>]*>.*?</table>', page, re.S)
    assert row and '<a href="#i-django__django-11133">' in row.group(0)
    assert 'id="i-django__django-11133"' in page


# --------------------------------------------------------------------------- comparison


def _runs(tmp_path: Path) -> tuple[RunDir, RunDir]:
    S = Status  # noqa: N806
    baseline = {
        "django__django-1": S.RESOLVED, "django__django-2": S.RESOLVED,
        "django__django-3": S.NO_OP, "sympy__sympy-1": S.ERROR, "sympy__sympy-2": S.REGRESSION,
        "astropy__astropy-1": S.RESOLVED,  # only in the baseline
    }  # fmt: skip
    tonight = {
        "django__django-1": S.RESOLVED, "django__django-2": S.ERROR,
        "django__django-3": S.RESOLVED, "sympy__sympy-1": S.NO_OP, "sympy__sympy-2": S.ERROR,
        "flask__flask-1": S.ERROR,  # only in tonight's run
    }  # fmt: skip
    dirs = []
    for name, statuses in (("baseline", baseline), ("tonight", tonight)):
        run = RunDir(tmp_path / name)
        run.write_config({"run_id": name})
        for instance_id, status in statuses.items():
            error = status == Status.ERROR
            run.write_result(
                _result(instance_id, status, Reason.ENVIRONMENT if error else Reason.NONE,
                        f"install command failed after {len(instance_id)}s" if error else "")
            )  # fmt: skip
        dirs.append(run)
    return dirs[0], dirs[1]


def test_compare_lists_changes_on_the_common_instances(tmp_path: Path) -> None:
    baseline, tonight = _runs(tmp_path)
    c = compare_runs(tonight, baseline)
    assert (c.run, c.baseline) == ("tonight", "baseline")
    assert len(c.common) == 5 and not c.same_selection
    assert c.only_in_run == ("flask__flask-1",) and c.only_in_baseline == ("astropy__astropy-1",)
    assert [(x.instance_id, x.after, x.reason) for x in c.lost] == [
        ("django__django-2", Status.ERROR, "environment: install command failed after 16s")
    ]
    assert [(x.instance_id, x.before) for x in c.gained] == [("django__django-3", Status.NO_OP)]
    assert [(x.instance_id, x.before, x.after) for x in c.changed] == [
        ("sympy__sympy-1", Status.ERROR, Status.NO_OP),
        ("sympy__sympy-2", Status.REGRESSION, Status.ERROR),
    ]
    # flask__flask-1 is not common: not a new error of the comparison
    assert [(r.count, r.reason, r.message, r.instance_ids) for r in c.new_errors] == [
        (2, "environment", "install command failed after <n>s",
         ("django__django-2", "sympy__sympy-2")),
    ]  # fmt: skip
    assert c.fixed_errors == ("sympy__sympy-1",) and c.regressed
    repos = [(r.repo, r.instances, r.resolved_before, r.resolved_after, r.delta) for r in c.repos]
    assert repos == [("django/django", 3, 2, 2, 0), ("sympy/sympy", 2, 0, 0, 0)]
    delta = {name: (before, after, change) for name, before, after, change in c.row_delta()}
    assert delta["resolved_pct"] == (0.4, 0.4, 0.0)
    assert delta["error_pct"] == pytest.approx((0.2, 0.4, 0.2))
    assert delta["regression_pct"] == pytest.approx((0.2, 0.0, -0.2))


def test_compare_without_regression_and_with_itself(tmp_path: Path) -> None:
    baseline, tonight = _runs(tmp_path)
    same = compare_runs(tonight, tonight)
    assert same.same_selection and not same.regressed and not same.lost + same.gained
    assert all(change == 0 for *_, change in same.row_delta())
    # the other way round: tonight as the baseline, the baseline as the run
    back = compare(baseline.load_results(), tonight.load_results())
    assert [x.instance_id for x in back.gained] == ["django__django-2"]
    assert [x.instance_id for x in back.lost] == ["django__django-3"] and back.regressed
    improved = compare(
        [_result("a__b-1", Status.RESOLVED), _result("a__b-2", Status.NO_OP)],
        [_result("a__b-1", Status.ERROR, Reason.ENVIRONMENT, "x"), _result("a__b-2", Status.NO_OP)],
    )
    assert not improved.regressed and improved.fixed_errors == ("a__b-1",)
    assert improved.repos[0].delta == 1


def test_comparison_renders_as_text_and_html(tmp_path: Path) -> None:
    baseline, tonight = _runs(tmp_path)
    c = compare_runs(tonight, baseline)
    console = Console(record=True, width=160, color_system=None)
    console.print(render_comparison(c))
    text = console.export_text()
    assert "5 instance(s) in both runs" in text and "compared on the intersection" in text
    assert "REGRESSED: 1 instance(s) no longer resolved, 2 new error(s)" in text
    assert re.search(r"Resolved → not resolved.*django__django-2\s+│\s+django/django", text, re.S)
    assert re.search(r"error\s+│\s+20\.00%\s+│\s+40\.00%\s+│\s+\+20\.00 pp", text)
    assert re.search(r"│\s+2\s+│\s+environment\s+│\s+install command failed after <n>s", text)
    page = render_html(tonight, c)
    assert 'id="verdict" class="regressed"' in page
    for table in ("row-delta", "lost", "gained", "changed", "new-errors", "repo-delta"):
        assert re.search(f'<table id="{table}"[ >]', page), table
    lost = re.search(r'<table id="lost">.*?</table>', page, re.S)
    assert lost and '<a href="#i-django__django-2">' in lost.group(0)
    assert 'id="i-django__django-2"' in page


def _cli(*args: str) -> subprocess.CompletedProcess:
    return swe_green(*args, columns=200)


def test_report_compare_exit_status_says_whether_anything_regressed(tmp_path: Path) -> None:
    baseline, tonight = _runs(tmp_path)
    worse = _cli("report", str(tonight.path), "--compare", str(baseline.path), "--html")
    assert worse.returncode == 1, worse.stderr
    assert "REGRESSED" in worse.stdout and "Traceback" not in worse.stderr
    assert 'id="verdict" class="regressed"' in (tonight.path / REPORT_FILE).read_text()
    same = _cli("report", str(tonight.path), "--compare", str(tonight.path))
    assert same.returncode == 0 and "no regression" in same.stdout
    plain = _cli("report", str(tonight.path))
    assert plain.returncode == 0 and "Errors by cause" in plain.stdout
    missing = _cli("report", str(tonight.path), "--compare", str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "is not a run directory" in missing.stderr


def test_caveats_flag_many_left_out_p2p_tests_and_another_python():
    from orchestrator.frontends.report import caveats
    from orchestrator.models import CaseGroups, InstanceResult, Status

    def result(iid: str, excluded: int, passed: int, spec: str = "", used: str = ""):
        tests = CaseGroups(pass_to_pass_passed=[f"p{i}" for i in range(passed)],
                           pass_to_pass_excluded=[f"x{i}" for i in range(excluded)])  # fmt: skip
        return InstanceResult(instance_id=iid, status=Status.RESOLVED, tests=tests,
                              python_spec=spec, python_used=used)  # fmt: skip

    notes = caveats([
        result("a", excluded=1, passed=9),  # 10 %: not over the line, but a reduced set
        result("b", excluded=2, passed=8),  # 20 %
        result("c", excluded=0, passed=5, spec="3.6", used="3.9.2"),
        result("d", excluded=0, passed=5, spec="3.9", used="3.9.2"),
    ])  # fmt: skip
    assert notes == [
        ("a", "resolved*: graded on a reduced test set, 1 left out (x0)"),
        ("b", "2 of 10 PASS_TO_PASS tests left out of grading"),
        ("c", "ran on Python 3.9.2; the spec asks for 3.6"),
    ]


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


def test_one_passing_twin_heads_the_text_and_the_html_report(run: RunDir) -> None:
    """A twin that passed on one instance speaks for the whole run: it is the first line."""
    gamed = InstanceResult(
        instance_id="sympy__sympy-24562", repo="sympy/sympy", status=Status.NO_OP,
        reason=Reason.TWIN_PASSED, tests=_groups((0, 1), (2, 0)),
    )  # fmt: skip
    console = Console(record=True, width=200)
    console.print(render_text(run))
    assert "GAMING PROVEN" not in console.export_text()
    run.write_result(gamed)
    console = Console(record=True, width=200)
    console.print(render_text(run))
    first = console.export_text().strip().splitlines()[0]
    assert first.startswith("GAMING PROVEN") and "sympy__sympy-24562" in first
    page = render_html(run)
    assert page.index("id=gaming") < page.index('id="run-header"')


def test_report_of_a_run_killed_before_any_result_says_nothing_finished(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "killed")
    (run.path / "instances").mkdir(parents=True)
    run.write_config({"run_id": "run-killed", "instances": ["demo__calc-1", "demo__units-1"]})
    done = _cli("report", str(run.path))
    assert done.returncode == 3, done  # graded nothing, as `run` says it
    said = " ".join(done.stderr.split())
    assert f"Nothing finished in run {run.path}: no instance of the 2 selected has a result" in said
    assert f"Fix: `swe-green run --resume {run.path}` grades them." in said
    assert "took ?" not in done.stdout and "cover only the others" not in done.stdout


# every rule of a readable page, measured in the browser: no sideways scroll; a label, a
# chart's name or count, a table header never broken inside a word; a card shows no empty
# row; the sort hint only beside headers one can click; a time on one line
_READABLE = """(() => {
  const lines = (el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
  };
  const shown = (el) => el.offsetParent !== null && el.getClientRects().length > 0;
  const broken = [];
  for (const el of document.querySelectorAll(".tile .label, .bars > span, td.time")) {
    if (shown(el) && lines(el) > 1) broken.push(el.textContent);
  }
  for (const th of document.querySelectorAll("th")) {
    const words = th.textContent.trim().split(/\\s+/).length;
    if (shown(th) && lines(th) > words) broken.push(th.textContent);
  }
  const empty = Array.from(document.querySelectorAll("td"))
    .filter((td) => shown(td) && getComputedStyle(td).display === "block")
    .filter((td) => !td.textContent.trim()).map((td) => td.dataset.label);
  const hint = document.querySelector(".sort-hint");
  const head = document.querySelector("table.sortable thead");
  return JSON.stringify({
    scroll: document.documentElement.scrollWidth, inner: innerWidth, broken, empty,
    hint: hint ? shown(hint) : null, headers: head ? shown(head) : null,
  });
})()"""


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_every_page_reads_whole_at_390_800_and_1280_pixels(run: RunDir, tmp_path: Path) -> None:
    from orchestrator.frontends.viewer import write_viewer

    from .headless import Browser

    pages = [write_html(run), write_viewer(run)]
    pages += sorted((run.path / "viewer" / "i").glob("*.html"))
    with Browser(tmp_path / "profile") as browser:
        for page in pages:
            for width in (390, 800, 1280):
                browser.open(page.as_uri(), width)
                seen = json.loads(browser.evaluate(_READABLE))
                where = (page.name, width, seen)
                assert seen["scroll"] <= seen["inner"] == width, where
                assert seen["broken"] == [], where
                assert seen["empty"] == [], where
                assert seen["hint"] == seen["headers"], where  # the hint goes with the headers
