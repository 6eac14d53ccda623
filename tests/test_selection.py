"""The base run's test selection per runner (pure: the command validation runs at the base)."""

from __future__ import annotations

import subprocess

import pytest

from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe, suite_command
from orchestrator.recipes.selection import (
    runner_kind,
    selected_arguments,
    selected_directives,
)

TEST_PATCH = """\
diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1 +1,2 @@
 x = 1
+y = 2
diff --git a/tests/test_b.py b/tests/test_b.py
--- a/tests/test_b.py
+++ b/tests/test_b.py
@@ -1 +1,2 @@
 x = 1
+y = 2
diff --git a/tests/data.json b/tests/data.json
--- a/tests/data.json
+++ b/tests/data.json
@@ -1 +1 @@
-{}
+{"a": 1}
"""


def _recipe(test_cmd: str, log_format: str = "pytest") -> Recipe:
    return Recipe(repo="o/r", version="1", python="3.11", install="true", test_cmd=test_cmd,
                  log_format=log_format)  # fmt: skip


def _instance(f2p: list[str], repo: str = "o/r") -> Instance:
    return Instance(
        instance_id="o__r-1", repo=repo, base_commit="b", environment_setup_commit="e",
        test_patch=TEST_PATCH, FAIL_TO_PASS=f2p, PASS_TO_PASS=["tests/test_a.py::p"],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("test_cmd", "kind"),
    [
        ("pytest -rA", "pytest"),
        ("pytest -rA -vv -o console_output_style=classic --tb=no", "pytest"),
        ("tox --current-env -epy39 -v --", "pytest"),
        ("PYTHONWARNINGS='ignore::UserWarning' bin/test -C --verbose", "sympy"),
        ("python bin/test -C --verbose", "sympy"),
        ("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", "other"),
        ("python runtests.py --verbosity 2", "other"),
    ],
)
def test_the_runner_is_read_off_the_test_command(test_cmd, kind):
    assert runner_kind(_recipe(test_cmd)) == kind


def test_pytest_gets_node_ids_without_their_parameters_once_each():
    names = ["tests/test_b.py::T::test_x[a-b]", "tests/test_b.py::T::test_x[c d",
             "tests/test_a.py::test_y"]  # fmt: skip
    args = selected_arguments(_recipe("pytest -rA"), _instance(names), names)
    assert args == ["tests/test_b.py::T::test_x", "tests/test_a.py::test_y"]


@pytest.mark.parametrize(
    "names",
    [
        ["tests/test_a.py::test_y", "tests/test_c.py::test_z"],  # a file the patch does not touch
        ["tests/test_a.py"],  # no node id
        [],
    ],
)
def test_pytest_runs_the_whole_files_unless_every_name_is_in_them(names):
    assert selected_arguments(_recipe("pytest -rA"), _instance(names), names) is None


def test_sympy_gets_its_files_and_keywords():
    recipe = _recipe("bin/test -C --verbose", "sympy")
    assert selected_arguments(recipe, _instance(["test_x", "test_y"]), ["test_x", "test_y"]) == [
        "tests/test_a.py", "tests/test_b.py", "-k", "test_x", "test_y",
    ]  # fmt: skip
    assert selected_arguments(recipe, _instance(["test_x (doctest)"]), ["test_x (doctest)"]) is None


def test_django_runs_the_whole_files():
    recipe = _recipe("./tests/runtests.py --verbosity 2", "django")
    names = ["test_x (a.b.C)"]
    assert selected_arguments(recipe, _instance(names, "django/django"), names) is None


def test_the_selected_command_runs_only_the_selection(tmp_path):
    """The command validation runs at the base, run by bash as the eval script runs it."""
    names = ["tests/test_a.py::test_y[1]"]
    instance = _instance(names)
    recipe = _recipe("printf '%s\\n' pytest -rA")
    directives = selected_directives(recipe, instance, names)
    assert directives is not None
    command = suite_command(recipe, instance, directives)  # what the eval script runs
    assert "tests/test_b.py" not in command
    done = subprocess.run(["bash", "-c", f"( {command} )"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.split() == ["pytest", "-rA", "tests/test_a.py::test_y"]
    failing = _recipe("exit 3; pytest")
    chosen = selected_directives(failing, instance, names)
    assert chosen is not None  # the runner's exit code comes through
    command = suite_command(failing, instance, chosen)
    assert subprocess.run(["bash", "-c", f"( {command} )"]).returncode == 3


def test_a_rerun_needs_the_listed_tests_that_passed_in_the_order_they_ran():
    from orchestrator.models import CaseStatus as TS
    from orchestrator.validation.run_selection import rerun_names

    first = {"f.py::slow_fail[1]": TS.FAILED, "f.py::b": TS.PASSED, "f.py::skip": TS.SKIPPED,
             "f.py::a": TS.PASSED, "f.py::unlisted": TS.PASSED, "f.py::f2p": TS.PASSED}  # fmt: skip
    listed = ["f.py::f2p", "f.py::a", "f.py::b", "f.py::slow_fail[1]", "f.py::skip"]
    assert rerun_names(listed, first) == ["f.py::b", "f.py::a", "f.py::f2p"]
    assert rerun_names(listed, first, "other") is None  # django: the runner cannot select
    # nothing that costs time would be left out: the rerun runs what the first run ran
    everything = {"f.py::a": TS.PASSED, "f.py::b": TS.PASSED, "f.py::skip": TS.SKIPPED}
    assert rerun_names(["f.py::a", "f.py::b", "f.py::skip"], everything) is None


def test_a_selection_too_long_for_one_argument_runs_the_whole_files():
    names = [f"tests/test_a.py::test_{n:05d}_{'x' * 60}" for n in range(2000)]
    assert selected_directives(_recipe("pytest -rA"), _instance(names), names) is None
    assert selected_directives(_recipe("pytest -rA"), _instance(names[:10]), names[:10])


def test_flaky_tests_among_names_only_compare_what_the_rerun_ran():
    from orchestrator.models import CaseStatus as TS
    from orchestrator.validation.validation import flaky_tests

    first = {"f.py::a": TS.PASSED, "f.py::b": TS.PASSED, "f.py::gone": TS.FAILED}
    rerun = {"f.py::a": TS.PASSED, "f.py::b": TS.FAILED}  # f.py::gone was not selected
    assert flaky_tests([first, rerun], ["f.py::a", "f.py::b"]) == ["f.py::b"]
    assert flaky_tests([first, rerun]) == ["f.py::b", "f.py::gone"]
