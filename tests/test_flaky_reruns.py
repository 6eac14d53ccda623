"""Flaky outcomes: the tests that decide a verdict against the patch, re-run alone with other
hash seeds. Pure parts, and a real container where a patch makes a test fail by hash seed."""

from __future__ import annotations

import json

import pytest

from orchestrator.dataset.synthetic_repos import CALC
from orchestrator.grading.classify import classify, grade_tests
from orchestrator.grading.evaluation import Evaluation, SuiteRun, run_tests
from orchestrator.grading.flaky_reruns import (
    MAX_DECIDING,
    changed,
    deciding_tests,
    rerun_deciding,
    rerun_deciding_tests,
)
from orchestrator.models import CaseGroups, Instance, Reason, Status
from orchestrator.models import CaseStatus as TS
from orchestrator.recipes.recipe import Recipe
from orchestrator.recipes.selection import django_label, selected_directives
from sandbox_tools.contract import ACTIVATE, TESTBED

from .test_evaluation import CALC_FIXED, TIMEOUT, grading, instances, recipes

__all__ = ["grading", "instances", "recipes"]  # fixtures used here


def test_deciding_tests() -> None:
    # every PASS_TO_PASS failure decides; a FAIL_TO_PASS failure only when it is the only one
    groups = CaseGroups(pass_to_pass_failed=["p"], fail_to_pass_failed=["f"])
    assert deciding_tests(groups) == ["p", "f"]
    groups = CaseGroups(pass_to_pass_failed=["p"], fail_to_pass_failed=["f", "g"])
    assert deciding_tests(groups) == ["p"]
    assert deciding_tests(CaseGroups(fail_to_pass_passed=["f"], pass_to_pass_passed=["p"])) == []
    many = CaseGroups(pass_to_pass_failed=[f"p{i}" for i in range(MAX_DECIDING + 1)])
    assert deciding_tests(many) == []  # a broken patch, not a flake


def test_django_labels_and_selection() -> None:
    assert django_label("test_x (app.tests.CaseTest)") == "app.tests.CaseTest.test_x"
    assert django_label("test_x (app.tests.CaseTest)\nA docstring line.") is None
    django = Recipe(
        repo="d/d", version="1", python="3.9", install="", test_cmd="./runtests.py",
        log_format="django",
    )  # fmt: skip
    instance = Instance(
        instance_id="d__d-1", repo="d/d", base_commit="b", environment_setup_commit="e",
        test_patch="diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-x\n+y\n",
    )  # fmt: skip
    alone = selected_directives(django, instance, ["test_x (a.B)"], django_labels=True)
    assert alone == ["a.B.test_x"]
    assert selected_directives(django, instance, ["test_x (a.B)"]) is None  # validation's
    pytest_recipe = django.model_copy(update={"test_cmd": "pytest -rA", "log_format": "pytest"})
    selected = selected_directives(pytest_recipe, instance, ["t.py::a"], django_labels=True)
    assert selected == selected_directives(pytest_recipe, instance, ["t.py::a"]) == ["t.py::a"]


def test_changed_compares_passing_not_the_exact_outcome() -> None:
    assert not changed(["FAILED", "ERROR", "MISSING", "TIMEOUT"])
    assert not changed(["PASSED", "XFAIL"])
    assert changed(["FAILED", "FAILED", "PASSED"])


ADD_TEST = "tests/test_calc.py::test_add"
BETWEEN_RUNS = "tests/test_calc.py::test_flaky_between_runs"  # flaky on purpose (validation)
FIRST_SEED = "4242"
TIMES = 3
# the patch's add() fails test_add (and nothing else) when hash(key) is odd: by hash seed
SEEDED_ADD = (
    "def add(a, b):\n"
    "    if (a, b) == (2, 3) and hash({key!r}) % 2:\n"
    "        raise RecursionError('maximum recursion depth exceeded')\n"
    "    return a + b\n"
)
HASHES = (
    "import json, os, subprocess, sys\n"
    "keys = [f'k{i}' for i in range(64)]\n"
    "code = 'import json, sys; print(json.dumps([hash(k) % 2 for k in sys.argv[1:]]))'\n"
    "out = {}\n"
    "for seed in sys.argv[1:]:\n"
    "    env = {**os.environ, 'PYTHONHASHSEED': seed}\n"
    "    done = subprocess.run([sys.executable, '-c', code, *keys], env=env, text=True,\n"
    "                          capture_output=True, check=True)\n"
    "    out[seed] = dict(zip(keys, json.loads(done.stdout)))\n"
    "print(json.dumps(out))\n"
)


def _odd_hashes(sandbox) -> dict[str, dict[str, int]]:
    """seed -> key -> hash(key) % 2, in the environment's own Python."""
    seeds = " ".join([FIRST_SEED, *(str(s) for s in range(1, TIMES + 1))])
    sandbox.write_file("/tmp/hashes.py", HASHES)
    done = sandbox.exec(
        ["bash", "-c", f"source {ACTIVATE} && python /tmp/hashes.py {seeds}"], timeout=120
    )
    assert done.ok, done.output
    return json.loads(done.stdout)


def _graded_first_run(sandbox, instance, recipe, key: str):
    """The patch (the fix, and add() failing by hash seed) in place, and its first run."""
    source = CALC_FIXED.replace("def add(a, b):\n    return a + b\n", SEEDED_ADD.format(key=key))
    sandbox.write_file(f"{TESTBED}/calc/__init__.py", source)
    seeded = recipe.model_copy(update={"env": {**recipe.env, "PYTHONHASHSEED": FIRST_SEED}})
    run = run_tests(sandbox, instance, seeded, timeout=TIMEOUT)
    groups = grade_tests(
        instance.FAIL_TO_PASS, instance.PASS_TO_PASS, run.outcomes, excluded_p2p=[BETWEEN_RUNS]
    )
    return run, groups


@pytest.mark.container
@pytest.mark.parametrize("flaky", [True, False], ids=["passes-under-another-seed", "always-fails"])
def test_a_test_failing_by_hash_seed_is_found_flaky(grading, flaky: bool) -> None:
    sandbox, instance, recipe = grading(CALC.instance_id)
    hashes = _odd_hashes(sandbox)
    later = [str(s) for s in range(1, TIMES + 1)]
    # a key that fails the first run; passes under one of the later seeds, or under none
    key = next(
        k
        for k in hashes[FIRST_SEED]
        if hashes[FIRST_SEED][k] and any(not hashes[s][k] for s in later) == flaky
    )
    run, groups = _graded_first_run(sandbox, instance, recipe, key)
    assert run.crash is None, run.crash
    assert groups.pass_to_pass_failed == [ADD_TEST], groups
    assert classify(groups) == Status.BREAKING_RESOLVED
    found = rerun_deciding_tests(
        sandbox, instance, recipe, groups, run.outcomes, times=TIMES, timeout=TIMEOUT
    )
    if flaky:
        first_pass = next(i for i, s in enumerate(later) if not hashes[s][key])
        assert found.flaky == {ADD_TEST: ["FAILED"] * (first_pass + 1) + ["PASSED"]}
        assert found.runs == first_pass + 1  # it stops at the first changed outcome
    else:
        assert found.flaky == {} and found.runs == TIMES
        assert found.seen == {ADD_TEST: ["FAILED"] * (TIMES + 1)}  # the test ran each time
    assert found.seconds > 0


@pytest.mark.parametrize(
    ("status", "reason", "logs", "ran"),
    [
        (Status.RESOLVED, Reason.NONE, {}, True),  # nothing decided against the patch
        (Status.REGRESSION, Reason.TAMPER_DETECTED, {}, True),  # output not to be trusted
        (Status.REGRESSION, Reason.NONE, {"reinstall": "reinstall.log"}, True),  # elsewhere
        (Status.ERROR, Reason.TEST_TIMEOUT, {}, True),
        (Status.NO_OP, Reason.PATCH_APPLY_FAILED, {}, False),  # no test run
    ],
)
def test_which_verdicts_are_not_re_run(status, reason, logs, ran) -> None:
    """These return before any container or setting is touched (none is given)."""
    evaluation = Evaluation(
        status=status, reason=reason, logs=logs, groups=CaseGroups(pass_to_pass_failed=["p"]),
        test_run=SuiteRun(outcomes={"p": TS.FAILED}) if ran else None,
    )  # fmt: skip
    found = rerun_deciding(None, None, None, evaluation, times=TIMES, timeout=TIMEOUT)
    assert found.runs == 0 and found.flaky == {}
