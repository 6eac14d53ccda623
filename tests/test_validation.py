"""Validation costs what it must: the base run selects the FAIL_TO_PASS tests where the
runner can, the gold runs every listed test, reruns happen only when they can change the
verdict; the verdicts stay those of running everything."""

from __future__ import annotations

import pytest

from orchestrator.environments.build import prepare_instance
from orchestrator.environments.prepared import recipe_of
from orchestrator.validation.twins import POOL
from orchestrator.validation.validation import _cache_path, validate

pytestmark = pytest.mark.container

# a "fix" that changes only the README: the FAIL_TO_PASS tests still fail with it
README_ONLY = """\
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-calc: tiny arithmetic helpers.
+calc: tiny arithmetic helpers!
"""


def _validate(run_ctx, instance, prepared, recipe=None, runs=2):
    run_ctx.settings = run_ctx.settings.replace(validation_runs=runs)
    _cache_path(run_ctx, prepared.instance_image).unlink(missing_ok=True)  # validate again
    check = validate(run_ctx, instance, prepared.snapshot, recipe or recipe_of(prepared))
    return check, run_ctx.instance_dir(instance)


@pytest.mark.parametrize(
    ("instance_id", "phases"),
    [
        # pytest: node ids of the FAIL_TO_PASS tests only
        ("demo__calc-1", ["base", "gold", "gold_rerun", "twins", "twins_prepare"]),
        # sympy-style: bin/test -k; this runner takes -k's names for files and crashes, so
        # the whole files run again in a fresh container
        ("demo__units-1", ["base", "base_all", "gold", "gold_rerun", "twins", "twins_prepare"]),
        # django-style runner: no selection
        ("demo__textkit-1", ["base", "gold", "gold_rerun", "twins", "twins_prepare"]),
    ],
)
def test_the_base_runs_only_what_it_must_and_the_verdict_stays(
    run_ctx, synthetic_instances, instance_id, phases
):
    instance = synthetic_instances[instance_id]
    prepared = prepare_instance(run_ctx, instance)
    check, out = _validate(run_ctx, instance, prepared)
    assert check.ok, check.message
    assert sorted(check.timings) == sorted(phases)
    base = (out / "validation_base_output.txt").read_text()
    gold = (out / "validation_gold_output.txt").read_text()
    assert (out / "validation_gold_output_2.txt").is_file()
    for name in instance.PASS_TO_PASS:  # every listed test runs with the gold patch
        assert name.split("::")[-1].split(" ")[0].split("[")[0] in gold
    if instance_id == "demo__calc-1":
        assert "test_mul_negative FAILED" in base or "FAILED tests/test_calc.py::test_mul" in base
        assert "test_add" not in base and "test_flaky_between_runs" not in base
        assert check.flaky == ["tests/test_calc.py::test_flaky_between_runs"]
    else:
        assert all(name.split(" ")[0] in base for name in instance.PASS_TO_PASS)
    # every FAIL_TO_PASS test has a pool of effective twins, which the gold patch failed twice
    assert {t.test for t in check.twins} == set(instance.FAIL_TO_PASS)
    assert check.twin_gaps == {}
    for test in instance.FAIL_TO_PASS:
        pool = [t.replacement for t in check.twins if t.test == test]
        assert 1 <= len(pool) <= POOL and len(set(pool)) == len(pool), pool
    for twin in check.twins:
        assert check.twin_files[twin.path][twin.start : twin.end] != twin.replacement
    twinned = (out / "validation_twins_output_2.txt").read_text()  # the last round's
    if instance_id == "demo__calc-1":  # failed where the value was changed
        assert any(f"{t.path}:{t.line}: AssertionError" in twinned for t in check.twins)


def test_no_rerun_when_the_first_gold_run_fails_validation(run_ctx, synthetic_instances):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    broken = instance.model_copy(update={"patch": README_ONLY})
    check, out = _validate(run_ctx, broken, prepared)
    assert not check.ok
    assert check.message.startswith("FAIL_TO_PASS tests fail even with the gold patch")
    assert sorted(check.timings) == ["base", "gold"]
    assert not (out / "validation_gold_output_2.txt").exists()


def test_no_gold_run_when_the_base_alone_fails_validation(run_ctx, synthetic_instances):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    silent = recipe_of(prepared).model_copy(update={"test_cmd": "true"})
    check, out = _validate(run_ctx, instance, prepared, recipe=silent)
    assert not check.ok
    assert check.message == "tests do not run at the base commit: the test command printed nothing"
    assert sorted(check.timings) == ["base"]
    assert not (out / "validation_gold_output.txt").exists()


def test_a_rerun_runs_only_the_listed_tests_that_passed(run_ctx, synthetic_instances):
    """Five of the nine tests are not listed here: the rerun leaves them out, and still finds
    the flaky one."""
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    flaky = "tests/test_calc.py::test_flaky_between_runs"
    fewer = instance.model_copy(
        update={"PASS_TO_PASS": ["tests/test_calc.py::test_local_service_answers", flaky]}
    )
    check, out = _validate(run_ctx, fewer, prepared)
    assert check.ok, check.message
    assert check.flaky == [flaky] and check.excluded_p2p == [flaky]
    first = (out / "validation_gold_output.txt").read_text()
    rerun = (out / "validation_gold_output_2.txt").read_text()
    assert "PASSED tests/test_calc.py::test_add" in first
    assert "test_add" not in rerun and "test_floordiv_positive" not in rerun
    assert "PASSED tests/test_calc.py::test_mul_negative" in rerun


def test_a_selected_rerun_that_does_not_answer_runs_the_whole_files(run_ctx, synthetic_instances):
    """demo__units-1's runner takes the names after -k for files and crashes: the rerun runs
    the whole files again, and nothing is taken for flaky."""
    instance = synthetic_instances["demo__units-1"]
    prepared = prepare_instance(run_ctx, instance)
    unlisted = instance.model_copy(update={"PASS_TO_PASS": []})  # test_to_fahrenheit
    check, out = _validate(run_ctx, unlisted, prepared)
    assert check.ok, check.message
    assert check.flaky == [] and check.excluded_p2p == []
    rerun = (out / "validation_gold_output_2.txt").read_text()
    assert "test_to_celsius ok" in rerun and "test_to_fahrenheit ok" in rerun


def test_a_fail_to_pass_test_passing_in_the_selection_is_confirmed_by_the_whole_files(
    run_ctx, synthetic_instances
):
    """A FAIL_TO_PASS test that passes when run alone at the base is only taken to pass there
    when it also does with the whole test files, as the official harness runs them (a test
    can depend on the ones before it in its file: sphinx-8721). test_add passes at the base
    either way: the whole files run, and the instance is refused only then."""
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    passing = instance.model_copy(update={"FAIL_TO_PASS": ["tests/test_calc.py::test_add"]})
    check, out = _validate(run_ctx, passing, prepared, runs=1)
    assert not check.ok
    assert check.message == "FAIL_TO_PASS tests pass without any fix: tests/test_calc.py::test_add"
    assert sorted(check.timings) == ["base", "base_all", "gold"]
    base = (out / "validation_base_output.txt").read_text()
    assert "test_mul_negative" in base  # the whole file ran, not only the selection


def test_a_write_the_listings_cannot_show_opens_its_directory(run_ctx, synthetic_instances):
    """The tests make a directory at the root and a file there that they remove again (as
    pylint's pyreverse tests do): the recording shows only the new directory. In grading's
    layout the root is closed and the tests fail; validation sees this, opens the root, and
    the tests pass as grading will run them."""
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    recipe = recipe_of(prepared)
    writes = recipe.model_copy(
        update={"test_cmd": f"mkdir -p made && touch junk && rm junk && {recipe.test_cmd}"}
    )
    check, out = _validate(run_ctx, instance, prepared, recipe=writes, runs=1)
    assert check.ok, check.message
    assert "." in check.writable and "made/" in check.writable, check.writable
    assert "layout" in check.timings
    assert (
        "PASSED tests/test_calc.py::test_mul_negative"
        in (out / "validation_layout_output.txt").read_text()
    )


def test_no_layout_run_when_the_listings_explain_every_write(run_ctx, synthetic_instances):
    """The runner's cache at the root is made beforehand, as grading makes it: nothing is
    unexplained, and the tests do not run a third time."""
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    check, out = _validate(run_ctx, instance, prepared, runs=1)
    assert check.ok, check.message
    assert sorted(check.timings) == ["base", "gold", "twins", "twins_prepare"]
    assert "." not in check.writable
    assert not (out / "validation_layout_output.txt").exists()
