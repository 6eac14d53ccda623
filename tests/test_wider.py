"""The wider run: its scope (which of the repository's test modules, read from their
imports), its comparison with the gold patch's two runs, and end to end on the synthetic
calculator (a patch that resolves the task and breaks a test beyond it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report.html import write_html
from orchestrator.frontends.report.text import render_text
from orchestrator.frontends.viewer.instance_page import render_instance
from orchestrator.grading.classify import aggregate
from orchestrator.grading.wider import EMPTY_SCOPE, WiderBaseline, without_baseline
from orchestrator.grading.wider.compare import (
    MISSING,
    compare,
    failure_excerpt,
    stable_baseline,
)
from orchestrator.grading.wider.scope import (
    changed_modules,
    imports_of,
    index_of,
    module_name,
    select_scope,
)
from orchestrator.models import CaseStatus, InstanceResult, Status, WiderCheck, WiderTest
from orchestrator.validation.wider import GoldRuns, uncollectable
from sandbox_tools.contract import TESTBED

from .conftest import cli_env, run_cli

P, F, E = CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.ERROR
FIXTURES = Path(__file__).parent / "fixtures" / "patches"

# a repository in sympy's layout (tests inside each package), one in pytest's (src/, tests in
# testing/), one in requests' (tests beside the package, importing it from the top)
SYMPY = {
    "sympy/__init__.py": "from .core import *\n",
    "sympy/core/__init__.py": "from .basic import Basic\n",
    "sympy/core/basic.py": "",
    "sympy/core/numbers.py": "from .basic import Basic\n",
    "sympy/core/tests/__init__.py": "",
    "sympy/core/tests/test_basic.py": "from sympy import Symbol\n",
    "sympy/core/tests/test_numbers.py": "from sympy.core.numbers import Integer\n",
    "sympy/printing/__init__.py": "",
    "sympy/printing/str.py": "",
    "sympy/printing/tests/__init__.py": "",
    "sympy/printing/tests/test_str.py": "from sympy.core.basic import Basic\n",
    "sympy/printing/tests/test_repr.py": "from sympy import srepr\n",
    "sympy/utilities/tests/test_pickling.py": "from sympy.core import basic\n",
}
PYTEST = {
    "src/_pytest/__init__.py": "",
    "src/_pytest/python.py": "",
    "src/_pytest/mark/__init__.py": "",
    "src/_pytest/mark/structures.py": "from ..python import x\n",
    "testing/test_python.py": "import _pytest.python\n",
    "testing/test_mark.py": "from _pytest.mark import structures\n",
    "testing/test_other.py": "import pytest\n",
}
REQUESTS = {
    "requests/__init__.py": "from .models import Request\n",
    "requests/models.py": "",
    "tests/test_requests.py": "import requests\n",
    "tests/test_utils.py": "from requests.utils import x\n",
}


def index(files: dict[str, str]):  # noqa: ANN201
    tests = {p: t for p, t in files.items() if p.rsplit("/", 1)[-1].startswith("test_")}
    return index_of(files, tests)


def test_a_module_is_named_by_its_packages_upwards():
    files = set(PYTEST) | set(SYMPY)
    assert module_name("src/_pytest/python.py", files) == "_pytest.python"
    assert module_name("src/_pytest/mark/__init__.py", files) == "_pytest.mark"
    assert module_name("sympy/core/tests/test_basic.py", files) == "sympy.core.tests.test_basic"
    assert module_name("setup.py", files) == "setup"


def test_imports_are_read_from_the_code_relative_ones_made_absolute():
    source = (
        "import os, sympy.core.basic as b\nfrom sympy.core import numbers, Integer\n"
        "from ..basic import Basic\nfrom . import helpers\nfrom .x import *\n"
        "def f():\n    from sympy.printing.str import sstr\n"
    )
    found = imports_of(source, "sympy.core.tests.test_x")
    assert set(found) == {
        "os", "sympy.core.basic", "sympy.core", "sympy.core.numbers", "sympy.core.Integer",
        "sympy.core.basic.Basic", "sympy.core.tests", "sympy.core.tests.helpers",
        "sympy.core.tests.x", "sympy.printing.str", "sympy.printing.str.sstr",
    }  # fmt: skip
    assert "sympy.core.tests.x.*" not in found


def test_a_file_of_another_pythons_syntax_is_read_by_its_import_lines():
    source = "print 'old'\nimport sympy.core.basic\nfrom sympy.printing import str as s, repr\n"
    found = imports_of(source, "sympy.t")
    assert {
        "sympy.core.basic",
        "sympy.printing",
        "sympy.printing.str",
        "sympy.printing.repr",
    } <= set(found)


def test_the_scope_is_the_package_s_test_modules_and_the_modules_importing_it():
    scope = select_scope(["sympy/core/basic.py"], index(SYMPY), max_files=40)
    assert scope.why == {
        "sympy/core/tests/test_basic.py": "package",
        "sympy/core/tests/test_numbers.py": "package",
        "sympy/printing/tests/test_str.py": "imports",  # from sympy.core.basic import Basic
        "sympy/utilities/tests/test_pickling.py": "imports",  # from sympy.core import basic
    }
    # test_repr imports only the top package: not the module's
    assert "sympy/printing/tests/test_repr.py" not in scope.files
    assert scope.cut == 0


def test_the_task_s_own_test_files_and_changed_test_modules_are_left_out():
    scope = select_scope(
        ["sympy/core/basic.py", "sympy/core/tests/test_basic.py"], index(SYMPY),
        exclude=["sympy/core/tests/test_numbers.py"], max_files=40,
    )  # fmt: skip
    assert "sympy/core/tests/test_numbers.py" not in scope.files
    assert changed_modules(["a/tests/test_x.py", "a/b.py", "README.rst", "testing/c.py"]) == [
        "a/b.py"
    ]


def test_tests_outside_a_src_package_are_found_by_their_imports():
    scope = select_scope(["src/_pytest/python.py"], index(PYTEST), max_files=40)
    assert scope.files == ["testing/test_python.py"]
    # a relative import inside the package is no test module's
    scope = select_scope(["src/_pytest/mark/structures.py"], index(PYTEST), max_files=40)
    assert scope.files == ["testing/test_mark.py"]


def test_a_module_no_test_imports_falls_back_to_its_nearest_imported_package():
    scope = select_scope(["requests/models.py"], index(REQUESTS), max_files=40)
    assert scope.why == {"tests/test_requests.py": "imports package"}


def test_the_cap_keeps_the_nearest_and_counts_the_rest():
    scope = select_scope(["sympy/core/basic.py"], index(SYMPY), max_files=2)
    assert scope.files == ["sympy/core/tests/test_basic.py", "sympy/core/tests/test_numbers.py"]
    assert scope.cut == 2


def test_a_patch_without_a_python_module_has_no_scope():
    assert select_scope(["docs/index.rst"], index(SYMPY), max_files=40).files == []


def test_the_baseline_keeps_only_tests_both_gold_runs_agree_on():
    runs = [
        {"a": P, "b": P, "c": F, "d": P, "x": CaseStatus.XFAIL},
        {"a": P, "b": F, "c": E, "x": P},
    ]
    assert stable_baseline(runs) == {"a": True, "c": False, "x": True}
    assert stable_baseline([]) == {}


def test_a_test_passing_with_gold_and_failing_with_the_patch_is_a_regression():
    gold = [
        {"a": P, "b": P, "c": F, "flaky": P, "task": P},
        {"a": P, "b": P, "c": F, "flaky": F, "task": P},
    ]
    patch = {"a": F, "c": P, "flaky": F, "task": F, "new": P}
    section = "____ a ____\nassert 1 == 2\nE  AssertionError\n"
    exercising = {"a", "c", "task"}  # b exercises nothing the gold patch changes
    found = compare(
        stable_baseline(gold), set().union(*gold), patch, ["task"], section,
        exercises=exercising.__contains__,
    )  # fmt: skip
    # every regression, whatever it exercises
    assert [(t.name, t.gold, t.patch) for t in found.regressions] == [
        ("a", "PASSED", "FAILED"), ("b", "PASSED", MISSING),
    ]  # fmt: skip
    assert "AssertionError" in found.regressions[0].excerpt
    # either direction differs, in the tests of what gold changes; the task's own test is
    # never compared here
    assert [(t.name, t.patch) for t in found.differs] == [("a", "FAILED"), ("c", "PASSED")]
    assert (found.compared, found.left_out, found.no_baseline) == (2, 2, 1)
    assert found.exercising == 2  # a and c of the four both gold runs agree on


def test_the_same_outcomes_as_gold_are_clean():
    gold = [{"a": P, "b": F}, {"a": P, "b": F}]
    found = compare(
        stable_baseline(gold), {"a", "b"}, {"a": P, "b": F}, [], "", exercises=lambda _: True
    )
    assert not found.regressions and not found.differs


def test_the_failure_excerpt_is_the_runner_s_block_for_the_test():
    sympy = "___ sympy/core/tests/test_x.py:test_y ___\nTraceback\nAssertionError\n"
    assert "AssertionError" in failure_excerpt(sympy, "test_y")
    django = "test_y (a.b.C) ... FAIL\nFAIL: test_y (a.b.C)\n---\nAssertionError: 1 != 2\n"
    assert "1 != 2" in failure_excerpt(django, "test_y (a.b.C)")
    assert failure_excerpt("FAILED t.py::test_z - boom", "t.py::test_z") == (
        "FAILED t.py::test_z - boom"
    )


def test_the_verdict_marks_wider_regressions_and_keeps_the_status():
    regression = WiderTest(name="t", gold="PASSED", patch="FAILED")
    result = InstanceResult(instance_id="i", status=Status.RESOLVED)
    assert result.verdict == "resolved"
    result.wider = WiderCheck(ran=True, regressions=[regression])
    assert result.verdict == "resolved!" and result.status == Status.RESOLVED
    assert not result.wider.clean and WiderCheck(ran=True).clean


@pytest.mark.container
def test_a_patch_resolving_the_task_and_breaking_a_wider_test_is_named(env_settings, tmp_path):
    """demo__calc-1: the gold patch is clean beyond the task's tests; a patch that passes the
    task's tests and gets an exact division wrong is resolved, marked, with the test named."""
    breaking = (FIXTURES / "calc_floordiv_breaks_exact.diff").read_text()
    env = {**cli_env(env_settings, tmp_path / "runs"), "SWE_GREEN_WIDER_TESTS": "true"}
    results = {}
    for name, patch in (("gold", None), ("breaking", breaking)):
        run_dir = tmp_path / "runs" / name
        if patch is None:
            args = ["run", "--participant", "gold", "--id", "demo__calc-1"]
        else:
            predictions = tmp_path / f"{name}.jsonl"
            row = {"instance_id": "demo__calc-1", "model_name_or_path": name, "model_patch": patch}
            predictions.write_text(json.dumps(row) + "\n")
            args = ["run", "--predictions", str(predictions)]
        proc = run_cli([*args, "--output", str(run_dir)], env)
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out
        result = json.loads((run_dir / "instances" / "demo__calc-1" / "result.json").read_text())
        results[name] = (result, json.loads((run_dir / "results.json").read_text()), out)
    gold, gold_board, _ = results["gold"]
    assert gold["status"] == "resolved"
    wider = gold["wider"]
    assert wider["ran"] and wider["files"] == ["tests/test_calc_more.py"]
    assert wider["regressions"] == [] and wider["differs"] == []
    assert wider["gold_functions"] == ["floordiv", "mul"]
    # test_mul_by_zero and test_floordiv_exact call them; test_add_negative does not
    assert wider["exercising"] == 2
    # the test that cannot reach its server fails with gold both times: left out, counted
    assert wider["compared"] == 3 and wider["left_out"] == 1
    assert gold_board["results"][0]["resolved_wider_clean_count"] == 1
    breaking, board, out = results["breaking"]
    assert breaking["status"] == "resolved"  # the official verdict stands
    [regression] = breaking["wider"]["regressions"]
    assert regression["name"] == "tests/test_calc_more.py::test_floordiv_exact"
    assert regression["gold"] == "PASSED" and regression["patch"] == "FAILED"
    assert "assert 1 == 2" in regression["excerpt"]
    # it calls floordiv, which the gold patch changes: it differs from gold there too
    assert [test["name"] for test in breaking["wider"]["differs"]] == [regression["name"]]
    assert board["results"][0]["resolved_wider_regressions_count"] == 1
    assert "resolved!" in out and "test_floordiv_exact" in out
    # the wider run's own logs: the audit hook watched it as it watches the official run
    instance = tmp_path / "runs" / "breaking" / "instances" / "demo__calc-1"
    assert (instance / "wider" / "test_output.txt").is_file()
    assert (instance / "wider" / "audit.log").is_file()


def test_a_module_pytest_cannot_collect_is_named():
    output = (
        "collected 1305 items / 1 errors / 1304 selected\n"
        "==================================== ERRORS ====================================\n"
        "__________________ ERROR collecting testing/test_junitxml.py ___________________\n"
        "E   ModuleNotFoundError: No module named 'xmlschema'\n"
        "_____ ERROR collecting testing/code/test_source.py _____\n"
        "FAILED testing/test_junitxml.py\n"
    )
    files = ["testing/test_junitxml.py", "testing/code/test_source.py", "testing/test_x.py"]
    assert uncollectable(output, files) == files[:2]
    assert uncollectable(output, files[1:]) == files[1:2]  # only the wider set's
    assert uncollectable("ERROR testing/test_x.py::test_y - boom\n", files) == []


def test_the_modules_below_a_conftest_that_cannot_be_imported_are_named():
    """A conftest whose import fails stops the whole session: every module below it goes."""
    output = (
        "ImportError while loading conftest '/testbed/examples/javascript/tests/conftest.py'.\n"
        "examples/javascript/tests/conftest.py:3: in <module>\n"
        "    from js_example import app\n"
        "E   ModuleNotFoundError: No module named 'js_example'\n"
    )
    files = ["examples/javascript/tests/test_js_example.py", "examples/tutorial/tests/test_auth.py",
             "tests/test_basic.py"]  # fmt: skip
    assert uncollectable(output, files) == files[:1]
    old = "ERROR: could not load /testbed/examples/tutorial/tests/conftest.py\n"  # pytest 3
    assert uncollectable(old, files) == files[1:2]
    elsewhere = "ImportError while loading conftest '/elsewhere/conftest.py'.\n"
    assert uncollectable(elsewhere, files) == []


def test_a_long_failure_keeps_its_header_and_its_error():
    frames = "".join(f'  File "x.py", line {n}, in f\n    return f()\n' for n in range(50))
    section = (
        "___ sympy/core/tests/test_args.py:test_fourier ___\n" + frames
        + "RecursionError: maximum recursion depth exceeded\n"
        + "___ sympy/core/tests/test_args.py:test_other ___\nTraceback\nAssertionError\n"
    )  # fmt: skip
    shown = failure_excerpt(section, "test_fourier")
    assert shown.startswith("___ sympy/core/tests/test_args.py:test_fourier ___")
    assert shown.endswith("RecursionError: maximum recursion depth exceeded")
    assert "[...]" in shown and "test_other" not in shown


def _wider_run(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / "run")
    regression = WiderTest(
        name="tests/test_calc_more.py::test_floordiv_exact", gold="PASSED", patch="FAILED",
        excerpt="____ test_floordiv_exact ____\nE       assert 1 == 2",
    )  # fmt: skip
    checks = {
        "demo__calc-1": WiderCheck(
            ran=True, files=["tests/test_calc_more.py"], compared=3, regressions=[regression],
            differs=[regression],
        ),
        "demo__textkit-1": WiderCheck(ran=True, files=["tests/test_more.py"], compared=2),
        "demo__units-1": WiderCheck(why_not="no gold baseline: no test module beyond the task's"),
    }  # fmt: skip
    for instance_id, check in checks.items():
        repo = "demo/" + instance_id.split("__")[1].split("-")[0]
        run.write_result(
            InstanceResult(instance_id=instance_id, repo=repo, status=Status.RESOLVED, wider=check)
        )
    return run


def test_a_gold_scope_of_the_task_s_tests_alone_is_nothing_beyond_them_not_a_missing_baseline():
    """requests has one test module, the task's: its wider set is empty, which is not a gold
    baseline that failed; any other reason is."""
    empty = without_baseline(WiderBaseline(why_not=EMPTY_SCOPE))
    assert empty is not None and empty.why_not.split(":")[0] == "nothing beyond the task's tests"
    timed_out = without_baseline(WiderBaseline(why_not="the gold patch's wider run timed out"))
    assert timed_out is not None and timed_out.why_not.startswith("no gold baseline: ")
    assert without_baseline(WiderBaseline()) is None
    assert "validation is off" in (without_baseline(None) or WiderCheck()).why_not


def test_the_reports_name_the_regressions_beyond_the_task_s_tests(tmp_path):
    run = _wider_run(tmp_path)
    console = Console(record=True, width=200, color_system=None)
    console.print(render_text(run))
    text = console.export_text()
    assert "of 3 resolved verdict(s), 1 clean beyond the task's tests, 1 with regressions" in text
    assert "1 not compared; 1: no gold baseline" in text
    table = text[text.index("Regressions beyond the task's tests") :]
    assert "demo__calc-1" in table and "test_floordiv_exact" in table
    assert "assert 1 == 2" in table and "demo__textkit-1" not in table
    html = Path(write_html(run)).read_text()
    assert "<ul id=wider-regressions>" in html and "test_floordiv_exact" in html
    assert 'class="marks" title="the repository' in html
    row = aggregate([InstanceResult.model_validate_json(p.read_text()) for p in
                     sorted((run.path / "instances").glob("*/result.json"))])  # fmt: skip
    assert (row.resolved_wider_clean_count, row.resolved_wider_regressions_count) == (1, 1)
    assert row.resolved_wider_not_run_count == 1 and row.resolved_count == 3


def test_the_viewer_gives_the_wider_run_a_section_of_its_own(tmp_path):
    run = _wider_run(tmp_path)
    calc = InstanceResult.model_validate_json(
        (run.path / "instances" / "demo__calc-1" / "result.json").read_text()
    )
    page = render_instance(calc, run.path / "instances" / "demo__calc-1")
    section = page[page.index('<h2 id="wider">') :]
    assert "1 test module(s)" in section and "1 regression(s)" in section
    assert "Pass with gold, fail with this patch: 1" in section
    assert "assert 1 == 2" in section
    units = InstanceResult(instance_id="u", status=Status.RESOLVED,
                           wider=WiderCheck(why_not="no gold baseline: x"))  # fmt: skip
    assert "not compared: no gold baseline: x" in render_instance(units, tmp_path)
    assert 'id="wider"' not in render_instance(
        InstanceResult(instance_id="v", status=Status.RESOLVED), tmp_path
    )


@pytest.mark.container
def test_the_modules_below_a_broken_conftest_are_left_out_and_the_rest_runs_twice(
    grading_box, run_ctx
):
    """A conftest whose import fails stops every run of the wider set: the gold runs leave
    the modules below it out (unrunnable, counted) and run the others twice."""
    sandbox, instance, recipe = grading_box("demo__calc-1")
    example = "examples/app/tests"
    sandbox.write_file(f"{TESTBED}/{example}/conftest.py", "import app_not_installed\n")
    sandbox.write_file(
        f"{TESTBED}/{example}/test_app.py", "import calc\n\n\ndef test_app():\n    assert calc\n"
    )
    files = [f"{example}/test_app.py", "tests/test_calc_more.py"]
    baseline, runs = GoldRuns(run_ctx, instance, recipe, sandbox, []).run(
        WiderBaseline(files=files)
    )
    assert baseline.unrunnable == files[:1] and baseline.files == files[1:]
    assert len(runs) == 2
    assert all(any("test_calc_more.py" in name for name in run.outcomes) for run in runs)
