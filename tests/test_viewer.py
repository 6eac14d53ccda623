"""The run viewer: what it shows of a run (excerpts per test, the diff, reasons of changes),
and the pages in headless Chromium at 800 and 1280 pixels: no sideways scroll, every link
resolves to a file."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report import compare, compare_runs
from orchestrator.frontends.viewer import write_viewer
from orchestrator.frontends.viewer.excerpts import excerpt, short_names
from orchestrator.frontends.viewer.instance_page import diff_html
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import InstanceResult, Reason, Status
from tests.headless import Browser, chromium

PYTEST_OUTPUT = """\
============================= test session starts ==============================
collected 4 items

tests/test_calc.py ..F.                                                    [100%]

=================================== FAILURES ===================================
_________________________ TestCalc.test_divide[zero] ___________________________

    def test_divide(self):
>       assert divide(1, 0) == 0
E       ZeroDivisionError: division by zero

tests/test_calc.py:12: ZeroDivisionError
_________________________ test_other _________________________
E   something else
=========================== short test summary info ============================
PASSED tests/test_calc.py::test_add
PASSED tests/test_calc.py::test_sub
FAILED tests/test_calc.py::TestCalc::test_divide[zero] - ZeroDivisionError
PASSED tests/test_calc.py::test_mul
========================= 1 failed, 3 passed in 0.05s ==========================
"""

DJANGO_OUTPUT = """\
test_ok (auth_tests.test_views.LoginTest) ... ok
test_redirect (auth_tests.test_views.LoginTest) ... FAIL

======================================================================
FAIL: test_redirect (auth_tests.test_views.LoginTest)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/auth_tests/test_views.py", line 40, in test_redirect
AssertionError: 302 != 200

----------------------------------------------------------------------
Ran 2 tests in 0.1s
"""

SYMPY_OUTPUT = """\
sympy/core/tests/test_basic.py[3] ..F                                      [FAIL]

________________________________________________________________________________
___________ sympy/core/tests/test_basic.py:test_subs ___________
Traceback (most recent call last):
AssertionError

=== tests finished: 2 passed, 1 failed, in 0.29 seconds ===
"""

PATCH = """\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def divide(a, b):
-    return a / b
+    return a / b if b else 0
diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1 +1 @@
-old
+new <script>alert(1)</script>
"""


def test_short_names_of_each_runner() -> None:
    assert short_names("tests/test_calc.py::TestCalc::test_divide[zero]") == [
        "tests/test_calc.py::TestCalc::test_divide[zero]",
        "TestCalc.test_divide[zero]",
        "test_divide[zero]",
        "test_divide",
    ]
    assert short_names("test_redirect (auth_tests.test_views.LoginTest)")[1] == "test_redirect"


def test_excerpt_is_the_failure_section_of_a_failing_test() -> None:
    failing = excerpt(PYTEST_OUTPUT, "tests/test_calc.py::TestCalc::test_divide[zero]", True)
    assert failing.splitlines()[0].strip("_ ") == "TestCalc.test_divide[zero]"
    assert "ZeroDivisionError: division by zero" in failing
    assert "something else" not in failing  # the next test's section is not its
    passing = excerpt(PYTEST_OUTPUT, "tests/test_calc.py::test_add", False)
    assert passing == "PASSED tests/test_calc.py::test_add"
    django = excerpt(DJANGO_OUTPUT, "test_redirect (auth_tests.test_views.LoginTest)", True)
    assert django.startswith("FAIL: test_redirect") and "302 != 200" in django
    assert "Ran 2 tests" not in django
    sympy = excerpt(SYMPY_OUTPUT, "test_subs", True)
    assert "test_basic.py:test_subs" in sympy.splitlines()[0] and "AssertionError" in sympy
    assert excerpt(SYMPY_OUTPUT, "test_missing", True) == ""
    long = "\n".join(["FAIL: test_x (m.C)", *[f"line {i}" for i in range(100)]])
    cut = excerpt(long, "test_x (m.C)", True, limit=10).splitlines()
    assert len(cut) == 10 and cut[-1].startswith("[... 91 more lines")


PARAMETRIZED_OUTPUT = """\
=================================== FAILURES ===================================
________________________________ test_x[1-2] _________________________________
E   assert 3 == 4
________________________________ test_x[-1-1] ________________________________
E   assert 0 == 1
=========================== short test summary info ============================
FAILED tests/test_p.py::test_x[1-2] - assert 3 == 4
FAILED tests/test_p.py::test_x[-1-1] - assert 0 == 1
PASSED tests/test_p.py::test_x[0-0]
"""


def test_a_parametrized_tests_section_is_its_own_not_the_first_with_its_name() -> None:
    second = excerpt(PARAMETRIZED_OUTPUT, "tests/test_p.py::test_x[-1-1]", True)
    assert second.splitlines()[0].strip("_ ") == "test_x[-1-1]" and "0 == 1" in second
    assert "3 == 4" not in second
    first = excerpt(PARAMETRIZED_OUTPUT, "tests/test_p.py::test_x[1-2]", True)
    assert first.splitlines()[0].strip("_ ") == "test_x[1-2]" and "0 == 1" not in first
    # a passing parameter's lines name it, not its siblings
    assert excerpt(PARAMETRIZED_OUTPUT, "tests/test_p.py::test_x[0-0]", False) == (
        "PASSED tests/test_p.py::test_x[0-0]"
    )
    # a runner that prints the bare name still gives its section
    bare = "____ test_y ____\nE   boom\n=== 1 failed ===\n"
    assert "boom" in excerpt(bare, "tests/test_p.py::test_y[a]", True)


def test_diff_marks_left_out_files_and_escapes() -> None:
    page = diff_html(PATCH, {"tests/test_calc.py"})
    assert page.count('class="diff"') == 1 and page.count('class="diff excluded"') == 1
    assert "left out of grading" in page and "<script>" not in page
    assert '<div class="l add">+    return a / b if b else 0</div>' in page


def _result(iid: str, status: Status, **fields: object) -> InstanceResult:
    return InstanceResult(instance_id=iid, repo="acme/calc", status=status, **fields)


def _write_run(root: Path, name: str, results: list[InstanceResult]) -> RunDir:
    run = RunDir(root / name)
    run.write_config({"run_id": name, "participant_id": "demo"})
    for result in results:
        run.write_result(result)
        crashed = result.status == Status.ERROR
        output = "collected 4 items\nFatal Python error: Segmentation fault\n"
        run.write_text(result.instance_id, "test_output.txt", output if crashed else PYTEST_OUTPUT)
        run.write_text(result.instance_id, "patch.diff", PATCH)
    return run


F2P = "tests/test_calc.py::TestCalc::test_divide[zero]"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[RunDir, RunDir]:
    long_id = "acme__calc-" + "9" * 60  # an id far wider than a phone's screen
    tonight = [
        _result("acme__calc-1", Status.RESOLVED, tests=Groups(
            fail_to_pass_passed=["tests/test_calc.py::test_add"],
            pass_to_pass_passed=["tests/test_calc.py::test_sub"],
            pass_to_pass_excluded=["tests/test_calc.py::test_net"]),
            excluded_patch_files=["tests/test_calc.py"],
            timings={"setup": 3.0, "grading": 2.0, "total": 5.0}),
        _result("acme__calc-2", Status.PARTIALLY_RESOLVED, tests=Groups(
            fail_to_pass_passed=["tests/test_calc.py::test_add"],
            fail_to_pass_failed=[F2P], pass_to_pass_passed=["tests/test_calc.py::test_mul"])),
        _result(long_id, Status.ERROR, reason=Reason.TEST_CRASH,
                message="no test runner summary in the output: " + "x" * 300),
    ]  # fmt: skip
    baseline = [
        _result("acme__calc-1", Status.RESOLVED),
        _result("acme__calc-2", Status.RESOLVED, tests=Groups(
            fail_to_pass_passed=["tests/test_calc.py::test_add", F2P])),
        _result(long_id, Status.NO_OP),
    ]  # fmt: skip
    run = _write_run(tmp_path, "tonight", tonight)
    events = [
        {"event": "start", "t": 0.0},
        {"event": "tool_call", "t": 1.5, "call": {"id": "1", "name": "bash",
                                                  "arguments": {"command": "pytest -x"}}},
        {"event": "tool_result", "t": 2.0, "result": {"id": "1", "output": "1 failed"}},
    ]  # fmt: skip
    run.write_text(
        "acme__calc-2", "transcript.jsonl", "".join(json.dumps(e) + "\n" for e in events)
    )
    return run, _write_run(tmp_path, "baseline", baseline)


def test_comparison_gives_the_reason_of_each_change(runs: tuple[RunDir, RunDir]) -> None:
    run, baseline = runs
    c = compare_runs(run, baseline)
    assert [(x.instance_id, x.reason) for x in c.lost] == [("acme__calc-2", f"now failing: {F2P}")]
    assert c.changed[0].reason.startswith("test_crash: no test runner summary")
    back = compare(baseline.load_results(), run.load_results())
    assert back.gained[0].reason == f"now passing: {F2P}"
    assert back.changed[0].reason == "no longer an error (was test_crash)"
    # an empty patch: its tests fail because nothing changed, and that is the reason
    failing = Groups(fail_to_pass_failed=[F2P, "tests/test_calc.py::test_add"])
    empty = _result("acme__calc-2", Status.NO_OP, reason=Reason.EMPTY_PATCH, tests=failing)
    lost = compare([empty], baseline.load_results()).lost
    assert [x.reason for x in lost] == ["empty_patch"]


def test_viewer_pages(runs: tuple[RunDir, RunDir]) -> None:
    run, baseline = runs
    index = write_viewer(run, compare_runs(run, baseline))
    root = index.parent
    assert index == run.path / "viewer" / "index.html"
    assert (root / "compare-baseline.html").is_file() and (root / "viewer.css").is_file()
    overview = index.read_text()
    assert 'href="compare-baseline.html"' in overview and "Fix:" in overview
    assert 'href="i/acme__calc-2.html"' in overview
    page = (root / "i" / "acme__calc-2.html").read_text()
    assert "Partially resolved: FAIL_TO_PASS not passing:" in page
    assert "ZeroDivisionError: division by zero" in page  # the failing test's excerpt
    assert 'href="../../instances/acme__calc-2/patch.diff"' in page
    assert 'data-kind="tool_call"' in page and "bash {&quot;command&quot;: &quot;pytest -x" in page
    resolved = (root / "i" / "acme__calc-1.html").read_text()
    assert "left out of grading" in resolved and "tests/test_calc.py::test_net" in resolved
    error = next((root / "i").glob("acme__calc-999*.html")).read_text()
    assert "Fix: " not in error and "The test runner crashed or printed no summary" in error
    assert "Fatal Python error: Segmentation fault" in error  # the end of its test output
    comparison = (root / "compare-baseline.html").read_text()
    assert f"now failing: {F2P}" in comparison


_MEASURE = """JSON.stringify({
  scroll: document.documentElement.scrollWidth, inner: innerWidth,
  styled: getComputedStyle(document.body).maxWidth !== "none",
  links: Array.from(document.querySelectorAll("a[href]"), a => a.href)})"""


@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_viewer_in_chromium_fits_800_and_1280_pixels(
    runs: tuple[RunDir, RunDir], tmp_path: Path
) -> None:
    run, baseline = runs
    index = write_viewer(run, compare_runs(run, baseline))
    views = [index, index.parent / "compare-baseline.html", *sorted((index.parent / "i").iterdir())]
    with Browser(tmp_path / "profile") as browser:
        for view in views:
            for width in (800, 1280, 390):
                browser.open(view.as_uri(), width)
                seen = json.loads(browser.evaluate(_MEASURE))
                assert seen["scroll"] <= seen["inner"] == width, (view.name, width)
                assert seen["styled"], view.name  # the style sheet loaded from disk
                for link in seen["links"]:
                    target = Path(unquote(urlparse(link).path))
                    assert target.is_file(), (view.name, link)
        # the overview's table sorts on a click
        browser.open(index.as_uri(), 800)
        browser.evaluate('document.querySelector("th[data-key=duration]").click()')
        assert browser.evaluate("document.getElementById('instances').dataset.sortedBy") == (
            "duration"
        )
        browser.screenshot(tmp_path / "overview.png")
        assert (tmp_path / "overview.png").read_bytes().startswith(b"\x89PNG")
