"""Grading end to end on the synthetic instances, in real containers from instance images.

The instance images come from the environment phases (``prepare_instance``), built once per
session; every test grades in a fresh container started from one.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from orchestrator.dataset.synthetic_repos import CALC, TEXTKIT, UNITS
from orchestrator.diffs.apply import apply_patch
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.evaluation import (
    eval_script,
    no_op_groups,
    run_tests,
)
from orchestrator.grading.script import BEFORE_LIST, unexplained_directories, writable_paths
from orchestrator.models import CaseStatus as TS
from orchestrator.models import Instance, Reason, Status
from orchestrator.recipes.harness_files import (
    drop_harness_files,
    is_harness_file,
    runner_files,
    shadows_a_module,
)
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from sandbox_tools.contract import TEST_USER, TESTBED

CALC_BASE = CALC.setup_files["calc/__init__.py"]
CALC_FIXED = CALC.fix_src["calc/__init__.py"]
TIMEOUT = 300.0
MALICIOUS_CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def instances(synthetic_instances) -> dict[str, Instance]:
    return synthetic_instances


@pytest.fixture(scope="session")
def recipes(synthetic_dir) -> dict[str, Recipe]:
    items = json.loads((synthetic_dir / "recipes.json").read_text())
    return {item["repo"]: Recipe.model_validate(item) for item in items}


@pytest.fixture
def grading(grading_box):
    """``instance_id -> (sandbox, instance, recipe)``: a fresh container at the base commit."""
    return grading_box


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], check=True, capture_output=True, text=True)
    return done.stdout


def patch_for(synthetic: Path, instance: Instance, tmp: Path, files: dict[str, str]) -> str:
    """The git diff from the base commit to the base with ``files`` written over it."""
    tree = tmp / "patch-tree"
    _git("clone", "-q", str(synthetic / "mirrors" / f"{instance.owner_name}.git"), str(tree))
    _git("-C", str(tree), "reset", "-q", "--hard", instance.base_commit)
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    _git("-C", str(tree), "add", "-A")
    return _git("-C", str(tree), "diff", "--cached")


# --------------------------------------------------------------------------- pure


def test_eval_script_runs_its_steps_in_order(instances, recipes):
    instance = instances[CALC.instance_id]
    script = eval_script(instance, recipes[instance.repo])
    steps = [
        "source /opt/swe/activate.sh",
        "cd /testbed",
        "test_files=(tests/test_calc.py)",
        "\nreset_test_files\n",
        "git apply -v /opt/swe/eval/test.patch",
        'echo ">>>>> SWE_GREEN_START $nonce"',
        "( as_test_user 'pytest -rA tests/test_calc.py' ) || rc=$?",
        'echo ">>>>> SWE_GREEN_END $nonce exit=$rc"',
    ]
    positions = [script.index(step) for step in steps]
    assert positions == sorted(positions)
    assert script.rstrip().endswith("reset_test_files")  # restored: the script can run again
    assert f"git checkout -q {instance.base_commit} --" in script
    assert instance.test_patch not in script  # the test patch goes in as a file


def test_eval_script_exports_the_recipe_environment_before_its_commands(instances, recipes):
    instance = instances[CALC.instance_id]
    recipe = recipes[instance.repo].model_copy(
        update={"env": {"LANG": "en US"}, "eval_commands": ["echo setup"]}
    )
    script = eval_script(instance, recipe)
    assert script.index("export LANG='en US'") < script.index("echo setup")
    assert script.index("echo setup") < script.index("cd /testbed")


def test_runner_files_are_the_paths_the_test_command_names(recipes):
    assert runner_files(recipes[UNITS.repo]) == ["bin/test"]
    assert runner_files(recipes[TEXTKIT.repo]) == ["runtests.py"]
    assert runner_files(recipes[CALC.repo]) == []


@pytest.mark.parametrize(
    ("path", "infra"),
    [
        ("conftest.py", True),
        ("src/pkg/conftest.py", True),
        ("tests/helpers.py", True),
        ("sympy/core/tests/test_basic.py", True),
        ("lib/matplotlib/testing/decorators.py", True),
        ("xarray/testing.py", True),
        ("pkg/test_things.py", True),
        ("pytest.ini", True),
        ("tox.ini", True),
        ("setup.cfg", True),
        ("pyproject.toml", True),
        ("sitecustomize.py", True),
        ("evil.pth", True),
        (".gitattributes", True),
        ("calc/__init__.py", False),
        ("src/_pytest/python.py", False),
        ("sympy/utilities/randtest.py", False),
        ("setup.py", False),
        ("docs/latest.rst", False),
    ],
)
def test_test_infrastructure_paths(path, infra):
    assert is_harness_file(path) is infra


def harness_dropped(patch: str, instance: Instance, recipe: Recipe) -> tuple[str, list[str]]:
    """:func:`drop_harness_files` on a text: the text kept and the files dropped."""
    kept, dropped = drop_harness_files(patch, instance, recipe)
    return kept.text, dropped


def test_drop_test_infrastructure_keeps_source_and_gold_files(instances, recipes):
    instance = instances[UNITS.instance_id]
    recipe = recipes[instance.repo]
    source = "--- a/units/__init__.py\n+++ b/units/__init__.py\n@@ -1 +1 @@\n-a\n+b\n"
    infra = (
        "diff --git a/bin/test b/bin/test\n--- a/bin/test\n+++ b/bin/test\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/conftest.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    setup_cfg = "--- a/setup.cfg\n+++ b/setup.cfg\n@@ -1 +1 @@\n-a\n+b\n"
    kept, dropped = harness_dropped(source + infra + setup_cfg, instance, recipe)
    assert (kept, dropped) == (source, ["bin/test", "conftest.py", "setup.cfg"])
    # a file the gold patch changes stays, even where it counts as test infrastructure
    gold_changes_setup_cfg = instance.model_copy(update={"patch": instance.patch + setup_cfg})
    kept, dropped = harness_dropped(source + setup_cfg, gold_changes_setup_cfg, recipe)
    assert (kept, dropped) == (source + setup_cfg, [])


@pytest.mark.parametrize(
    ("path", "dirs", "module"),
    [
        ("unittest.py", ("",), "unittest"),
        ("traceback.py", ("bin",), None),
        ("bin/traceback.py", ("", "bin"), "traceback"),
        ("pytest/__init__.py", ("",), "pytest"),
        ("_pytest.cpython-311-x86_64-linux-gnu.so", ("",), "_pytest"),
        ("calc/unittest.py", ("",), None),  # inside a package: calc.unittest, no shadow
        ("calc.py", ("",), None),
        ("bin/test", ("", "bin"), None),
    ],
)
def test_modules_that_shadow_the_standard_library_or_the_runner(path, dirs, module):
    assert shadows_a_module(path, dirs) == module


def test_new_shadowing_modules_are_left_out_but_edits_are_not(instances, recipes):
    instance = instances[UNITS.instance_id]
    recipe = recipes[instance.repo]
    new = (
        "diff --git a/bin/traceback.py b/bin/traceback.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/bin/traceback.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    edit = "--- a/bin/traceback.py\n+++ b/bin/traceback.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert harness_dropped(new, instance, recipe) == ("", ["bin/traceback.py"])
    assert harness_dropped(edit, instance, recipe) == (edit, [])


_PYC_DATA = "GIT binary patch\nliteral 3\nKcmZ>A0ssI200961\n\nliteral 0\nHcmV?d00001\n\n"


def _binary(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n{_PYC_DATA}"
    )


@pytest.mark.parametrize(
    "path",
    [
        "calc/__pycache__/__init__.cpython-311.pyc",
        "unittest/__init__.pyc",  # a sourceless package shadowing the standard library
        "bin/traceback/__init__.pyc",
        "calc/_speedups.cpython-311-x86_64-linux-gnu.so",
        "calc/_speedups.pyd",
        "calc/data.bin",  # any file with binary data
    ],
)
def test_compiled_and_binary_files_are_left_out(instances, recipes, path):
    instance = instances[UNITS.instance_id]
    recipe = recipes[instance.repo]
    source = "--- a/units/__init__.py\n+++ b/units/__init__.py\n@@ -1 +1 @@\n-a\n+b\n"
    kept, dropped = harness_dropped(source + _binary(path), instance, recipe)
    assert (kept, dropped) == (source, [path])
    # unless the gold patch changes binaries of that kind: then kept (and flagged)
    gold = instance.model_copy(update={"patch": instance.patch + _binary("units/other.bin")})
    if path == "calc/data.bin":
        assert harness_dropped(source + _binary(path), gold, recipe)[1] == []


def test_a_pyc_named_file_without_binary_data_is_still_bytecode(instances, recipes):
    instance = instances[CALC.instance_id]
    text = (
        "diff --git a/calc/__pycache__/x.cpython-311.pyc b/calc/__pycache__/x.cpython-311.pyc\n"
        "new file mode 100644\n--- /dev/null\n+++ b/calc/__pycache__/x.cpython-311.pyc\n"
        "@@ -0,0 +1 @@\n+x\n"
    )
    assert harness_dropped(text, instance, recipes[instance.repo]) == (
        "",
        ["calc/__pycache__/x.cpython-311.pyc"],
    )


def test_eval_script_removes_bytecode_and_keeps_the_repository_root_owned(instances, recipes):
    instance = instances[CALC.instance_id]
    script = eval_script(instance, recipes[instance.repo], test_user="nobody")
    assert "export PYTHONDONTWRITEBYTECODE=1" in script
    assert "-name __pycache__ -type d \\) -prune -exec rm -rf {} +" in script
    # only what is not root's yet is chowned (a chown copies the file up into the layer)
    assert "\\( ! -user root -o ! -group root \\) -exec chown -h root: {} +" in script
    assert "-type d -perm /7022 -exec chmod go-w,-t,u-s,g-s {} +" in script
    assert "a+rwx" not in script  # no directory of the repository is open to all
    assert 'chown "$test_user:" {}' not in script  # no directory becomes the test user's
    positions = [
        script.index("git apply -v"),
        script.index("python -I -S - sweep /testbed /opt/swe/bytecode/manifest.json"),
        script.index("-name __pycache__"),  # when the check cannot run: all bytecode goes
        script.index(">>>>> SWE_GREEN_START"),
    ]
    assert positions == sorted(positions)


def test_writable_paths_are_what_the_recorded_tests_wrote():
    before = ["d ", "d src", "f src/a.py", "d tests", "f tests/t.py", "f data.txt", "d out"]
    after = [
        *before, "f tests/t_out.txt", "d result_images", "d result_images/sub",
        "f result_images/sub/x.png", "d .pytest_cache", "f out/new.log",
    ]  # fmt: skip
    after.remove("f data.txt")
    changed = ["src/a.py", "tests/t_out.txt", "result_images/sub/x.png", "nonexistent"]
    assert writable_paths(before, after, changed) == [
        ".",  # lost data.txt
        ".pytest_cache/",  # new directories: created beforehand, all of them writable
        "out",
        "result_images/",
        "src/a.py",  # rewritten in place
        "tests",  # gained a file
    ]
    assert writable_paths(before, before, []) == []


def test_a_directory_where_the_tests_made_and_removed_something_is_writable():
    """pylint's test_parseable_file_path makes tests/testbed/test_target.py and removes it:
    the listings are the same before and after, only the directory's time says so."""
    before = ["d ", "d pylint", "f pylint/a.py", "d tests", "f tests/test_self.py"]
    # the directory's time changed, the listings did not: that directory, itself only
    assert writable_paths(before, before, ["tests"]) == ["tests"]
    # the root's time changed because the runner made its cache there: the root stays closed
    after = [*before, "d .pytest_cache", "f .pytest_cache/v"]
    assert writable_paths(before, after, ["", ".pytest_cache", ".pytest_cache/v"]) == [
        ".pytest_cache/"
    ]
    # the root itself, when nothing listed explains its change
    assert writable_paths(before, before, [""]) == ["."]


def test_a_directory_that_gained_only_directories_is_unexplained():
    """pylint's pyreverse tests write classes_No_Name.dot at the root and remove it, beside a
    new .benchmarks directory: the listings show only the new directory, so whether the
    root itself must be open is for validation to find out (in grading's layout)."""
    before = ["d ", "d pylint", "f pylint/a.py", "d tests", "f tests/t.py", "d out"]
    after = [*before, "d .benchmarks", "f .benchmarks/x", "d out/new", "f tests/t2.py"]
    changed = ["", ".benchmarks", "out", "tests", "pylint"]
    # tests gained a file, pylint changed with no listed change: both open already
    assert writable_paths(before, after, changed) == [".benchmarks/", "out/new/", "pylint", "tests"]
    assert unexplained_directories(before, after, changed) == [".", "out"]
    assert unexplained_directories(before, after, ["tests"]) == []
    assert unexplained_directories(before, before, [""]) == []
    # inside an output directory (made beforehand, open whole): nothing to explain
    cache = [*before, "d .pytest_cache"]
    assert unexplained_directories(cache, [*cache, "d .pytest_cache/v"], [".pytest_cache"]) == []


def test_a_recording_run_makes_the_default_output_directories_first(instances, recipes):
    """Grading makes .pytest_cache beforehand: a recording run does too, so that the runner's
    own cache does not make the root look written to."""
    instance = instances[CALC.instance_id]
    script = eval_script(instance, recipes[instance.repo], "nobody", record=True)
    made = script.index("mkdir -p /testbed/.pytest_cache /testbed/.hypothesis")
    assert made < script.index(f"> {BEFORE_LIST}")


def test_the_eval_script_opens_only_the_writable_paths(instances, recipes):
    instance = instances[CALC.instance_id]
    script = eval_script(
        instance, recipes[instance.repo], "nobody", ["out/", ".", "../etc", ".git/hooks", "/x"]
    )
    # nothing outside the repository, nothing of .git
    assert "for w in .pytest_cache/ .hypothesis/ out/ .; do" in script
    # nothing inside an output directory: a file the gold run rewrote there (pytest's cache of
    # node ids), missing in a fresh container, was made a directory (the runner crashed)
    inside = eval_script(
        instance, recipes[instance.repo], "nobody", [".pytest_cache/v/cache/nodeids", "out/x"]
    )
    assert "for w in .pytest_cache/ .hypothesis/ out/x; do" in inside
    assert '[ "$(realpath -m -- "$p")" = "$p" ] || continue' in script
    recording = eval_script(instance, recipes[instance.repo], "nobody", record=True)
    assert "-type d \\( ! -user root -o ! -group root \\) -exec chown root: {} +" in recording
    assert "-type d ! -perm -1777 -exec chmod a+rwx,+t {} +" in recording
    assert recording.rindex("tree-before.txt") < recording.index(">>>>> SWE_GREEN_START")
    assert recording.rindex("tree-after.txt") > recording.index(">>>>> SWE_GREEN_END")


def test_a_no_op_fails_every_fail_to_pass_test_and_passes_the_others(instances):
    instance = instances[CALC.instance_id]
    groups = no_op_groups(instance, excluded_p2p=["tests/test_calc.py::test_add"])
    assert groups.fail_to_pass_failed == instance.FAIL_TO_PASS
    assert groups.fail_to_pass_passed == [] and groups.pass_to_pass_failed == []
    assert groups.pass_to_pass_passed == instance.PASS_TO_PASS[1:]
    assert groups.pass_to_pass_excluded == ["tests/test_calc.py::test_add"]


# --------------------------------------------------------------------------- in containers


@pytest.mark.container
@pytest.mark.parametrize("instance_id", [CALC.instance_id, TEXTKIT.instance_id, UNITS.instance_id])
def test_the_gold_patch_resolves(grading, instance_id, tmp_path):
    sandbox, instance, recipe = grading(instance_id)
    request = GradingRequest(timeout=TIMEOUT, log_dir=tmp_path, test_user=TEST_USER)
    result = grade(sandbox, instance, recipe, instance.patch, request)
    assert (result.status, result.reason) == (Status.RESOLVED, Reason.NONE), result.message
    assert result.apply is not None and result.apply.strategy == "git apply"
    assert result.groups is not None
    assert result.groups.fail_to_pass_passed == instance.FAIL_TO_PASS
    assert result.groups.pass_to_pass_passed == instance.PASS_TO_PASS
    assert result.excluded_files == []
    assert sorted(Path(p).name for p in result.logs.values()) == [
        "apply.log",
        "audit.log",
        "eval.sh",
        "graded.patch",
        "test_output.txt",
    ]
    output = (tmp_path / "test_output.txt").read_text()
    assert re.search(r"^>>>>> SWE_GREEN_END [0-9a-f]{32} exit=0$", output, re.MULTILINE)
    # the audit hook ran in the test process, ended with it, and saw nothing of the gold patch
    audit = (tmp_path / "audit.log").read_text()
    assert audit.startswith("S\t") and "\nX\t" in audit and "\nE\t" not in audit, audit
    assert result.tamper_evidence == []


@pytest.mark.container
def test_without_the_patch_the_fail_to_pass_tests_fail(grading):
    sandbox, instance, recipe = grading(CALC.instance_id)
    run = run_tests(sandbox, instance, recipe, timeout=TIMEOUT)
    assert run.crash is None and not run.timed_out and run.exit_code == 1
    assert {name: run.outcomes[name] for name in instance.FAIL_TO_PASS} == {
        name: TS.FAILED for name in instance.FAIL_TO_PASS
    }
    assert all(run.outcomes[name] == TS.PASSED for name in instance.PASS_TO_PASS)


@pytest.mark.container
def test_a_test_run_printing_past_the_limit_is_a_crash_and_only_its_tail_is_read(
    grading, monkeypatch
):
    """The output's size comes with the read (the archive API states it first): over the
    limit nothing of it is read in, its tail is taken inside the container instead."""
    import orchestrator.grading.evaluation as evaluation

    monkeypatch.setattr(evaluation, "MAX_OUTPUT_BYTES", 2_000_000)
    monkeypatch.setattr(evaluation, "OUTPUT_KEEP", 10_000)
    sandbox, instance, recipe = grading(CALC.instance_id)
    flood = recipe.model_copy(
        update={"test_cmd": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo the-end"}
    )
    run = run_tests(sandbox, instance, flood, timeout=TIMEOUT)
    assert run.crash == "the test output is larger than 2000000 bytes"
    assert len(run.output) <= 10_000 and "the-end" in run.output
    # within the limit, the same run is read whole
    monkeypatch.setattr(evaluation, "MAX_OUTPUT_BYTES", 4_000_000)
    monkeypatch.setattr(evaluation, "OUTPUT_KEEP", 4_000_000)
    run = run_tests(sandbox, instance, flood, timeout=TIMEOUT)
    assert run.crash != "the test output is larger than 4000000 bytes"
    assert run.output.count("x") >= 3_000_000


@pytest.mark.container
@pytest.mark.parametrize("patch", [None, "", " \n"])
def test_an_empty_patch_is_a_no_op_without_a_test_run(grading, patch):
    sandbox, instance, recipe = grading(CALC.instance_id)
    result = grade(sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT))
    assert (result.status, result.reason) == (Status.NO_OP, Reason.EMPTY_PATCH)
    assert result.test_run is None and result.apply is None


@pytest.mark.container
@pytest.mark.parametrize(
    ("source", "status"),
    [
        (CALC_FIXED.replace("return a // b", "return int(a / b)"), Status.PARTIALLY_RESOLVED),
        (CALC_FIXED.replace("return a + b", "return a + b + 1"), Status.BREAKING_RESOLVED),
        (CALC_BASE.replace("return a + b", "return a - b"), Status.REGRESSION),
        (
            CALC_FIXED.replace("return a // b", "return a - b").replace("a + b", "a"),
            Status.WORK_IN_PROGRESS,
        ),
    ],
    ids=["fixes-mul-only", "fixes-both-breaks-add", "breaks-add", "half-and-breaks-add"],
)
def test_calc_patches_grade_by_the_status_table(grading, synthetic_dir, tmp_path, source, status):
    sandbox, instance, recipe = grading(CALC.instance_id)
    patch = patch_for(synthetic_dir, instance, tmp_path, {"calc/__init__.py": source})
    result = grade(sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT))
    assert result.groups is not None, result.message
    assert result.status == status
    assert result.reason == Reason.NONE


@pytest.mark.container
@pytest.mark.parametrize(
    ("instance_id", "path", "old", "new"),
    [
        (TEXTKIT.instance_id, "textkit/__init__.py", "text.title()", "text.lower()"),
        (UNITS.instance_id, "units/__init__.py", "c * 9 / 5 + 32", "c"),
    ],
)
def test_breaking_a_pass_to_pass_test_is_a_regression(
    grading, synthetic_dir, tmp_path, instance_id, path, old, new
):
    sandbox, instance, recipe = grading(instance_id)
    source = sandbox.read_file(f"/testbed/{path}").decode()
    patch = patch_for(synthetic_dir, instance, tmp_path, {path: source.replace(old, new)})
    result = grade(sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT))
    assert (result.status, result.reason) == (Status.REGRESSION, Reason.NONE), result.message


@pytest.mark.container
def test_a_garbage_patch_fails_to_apply(grading):
    sandbox, instance, recipe = grading(CALC.instance_id)
    result = grade(
        sandbox, instance, recipe, "I fixed it!\n+++ trust me\n", GradingRequest(timeout=TIMEOUT)
    )
    assert (result.status, result.reason) == (Status.NO_OP, Reason.PATCH_APPLY_FAILED)
    assert result.apply is not None and not result.apply.applied
    assert result.message and result.test_run is None


@pytest.mark.container
def test_a_conftest_that_flips_outcomes_works_unless_left_out(grading, synthetic_dir, tmp_path):
    sandbox, instance, recipe = grading(CALC.instance_id)
    patch = patch_for(synthetic_dir, instance, tmp_path, {"conftest.py": MALICIOUS_CONFTEST})
    # the attack is real: applied as it is, every test "passes" and the runner agrees
    assert apply_patch(sandbox, patch).applied
    run = run_tests(sandbox, instance, recipe, timeout=TIMEOUT)
    assert run.crash is None
    assert all(run.outcomes[name] == TS.PASSED for name in instance.FAIL_TO_PASS)

    fresh, _, _ = grading(CALC.instance_id)
    result = grade(fresh, instance, recipe, patch, GradingRequest(timeout=TIMEOUT))
    assert (result.status, result.reason) == (Status.NO_OP, Reason.EMPTY_PATCH)
    assert result.excluded_files == ["conftest.py"]
    assert "conftest.py" in result.message


@pytest.mark.container
def test_a_conftest_next_to_a_half_fix_is_left_out(grading, synthetic_dir, tmp_path):
    sandbox, instance, recipe = grading(CALC.instance_id)
    half = CALC_FIXED.replace("return a // b", "return int(a / b)")
    files = {"calc/__init__.py": half, "tests/conftest.py": MALICIOUS_CONFTEST}
    result = grade(
        sandbox,
        instance,
        recipe,
        patch_for(synthetic_dir, instance, tmp_path, files),
        GradingRequest(timeout=TIMEOUT),
    )
    assert result.status == Status.PARTIALLY_RESOLVED, result.message
    assert result.excluded_files == ["tests/conftest.py"]
    assert sandbox.exec(["test", "-e", "/testbed/tests/conftest.py"]).exit_code == 1


@pytest.mark.container
def test_printed_fake_result_lines_do_not_resolve(grading, synthetic_dir, tmp_path):
    sandbox, instance, recipe = grading(CALC.instance_id)
    fake = "".join(f"    print('PASSED {name}')\n" for name in instance.FAIL_TO_PASS)
    source = f"import atexit\n\n\n@atexit.register\ndef _fake():\n{fake}\n\n" + CALC_BASE
    patch = patch_for(synthetic_dir, instance, tmp_path, {"calc/__init__.py": source})
    result = grade(sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT))
    assert result.test_run is not None
    assert f"PASSED {instance.FAIL_TO_PASS[0]}" in result.test_run.section
    assert result.status == Status.NO_OP, result.message
    assert result.groups is not None and result.groups.fail_to_pass_passed == []


@pytest.mark.container
def test_a_hanging_test_is_a_timeout_error(grading, synthetic_dir, tmp_path):
    sandbox, instance, recipe = grading(CALC.instance_id)
    source = CALC_BASE.replace("    result = 0\n", "    while True:\n        pass\n")
    patch = patch_for(synthetic_dir, instance, tmp_path, {"calc/__init__.py": source})
    result = grade(sandbox, instance, recipe, patch, GradingRequest(timeout=15))
    assert (result.status, result.reason) == (Status.ERROR, Reason.TEST_TIMEOUT)
    assert result.test_run is not None and result.test_run.timed_out
    assert result.groups is None
    assert sandbox.exec("echo alive").stdout == "alive\n"


@pytest.mark.container
@pytest.mark.parametrize("user", [None, TEST_USER])
def test_run_tests_resets_test_files_runs_again_and_keeps_the_network_off(grading, user):
    """Twice in one container, as validation's gold runs do; as the test user too, whose run
    leaves the working tree's directories (/testbed itself) to that user: root's own git
    (the final reset, and plain ``git`` below, as git 2.30 of the 3.9 image sees it: it
    ignores ``-c safe.directory``) must still work there."""
    sandbox, instance, recipe = grading(CALC.instance_id)
    forged = "".join(f"def {n.split('::')[1]}():\n    pass\n\n\n" for n in instance.FAIL_TO_PASS)
    sandbox.write_file("/testbed/tests/test_calc.py", forged)  # a participant's own "tests"
    runs = [run_tests(sandbox, instance, recipe, timeout=TIMEOUT, test_user=user) for _ in range(2)]
    for run in runs:
        assert run.crash is None
        assert all(run.outcomes[name] == TS.FAILED for name in instance.FAIL_TO_PASS)
    # the same outcomes, but for the synthetic test that is flaky on purpose (validation runs)
    flaky = "tests/test_calc.py::test_flaky_between_runs"
    assert runs[0].outcomes.pop(flaky) == TS.PASSED and runs[1].outcomes.pop(flaky) == TS.FAILED
    assert runs[0].outcomes == runs[1].outcomes
    status = sandbox.exec(["git", "status", "--porcelain", "--untracked-files=no"], workdir=TESTBED)
    assert status.ok and status.stdout == ""
    sandbox.container.reload()
    assert "bridge" not in (sandbox.container.attrs["NetworkSettings"]["Networks"] or {})


@pytest.mark.container
def test_excluded_pass_to_pass_tests_are_not_held_against_the_patch(
    grading, synthetic_dir, tmp_path
):
    sandbox, instance, recipe = grading(CALC.instance_id)
    source = CALC_FIXED.replace("return a + b", "return a + b + 1")
    patch = patch_for(synthetic_dir, instance, tmp_path, {"calc/__init__.py": source})
    excluded = ["tests/test_calc.py::test_add"]
    result = grade(
        sandbox,
        instance,
        recipe,
        patch,
        GradingRequest(timeout=TIMEOUT, excluded_p2p=tuple(excluded)),
    )
    assert result.status == Status.RESOLVED, result.message
    assert result.groups is not None and result.groups.pass_to_pass_excluded == excluded


# --------------------------------------------------------------------------- hostile patches

# printed by the code under test at import, in the sympy runner's format, then it leaves
FORGED_SYMPY_LOG = """\
import os as _os
print({start!r})
print("test_to_fahrenheit ok")
print("test_to_celsius ok")
print("=" * 18 + " tests finished: 2 passed, 0 failed " + "=" * 18, flush=True)
_os._exit(0)
"""
FORCE_PASS_REPORTS = """\
import sys as _sys
if "_pytest.reports" in _sys.modules:
    from _pytest.reports import TestReport as _TR
    _orig = _TR.from_item_and_call.__func__
    def _forced(cls, item, call):
        report = _orig(cls, item, call)
        report.outcome, report.longrepr = "passed", None
        return report
    _TR.from_item_and_call = classmethod(_forced)
"""
ASSERTS_OFF = "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
SYMPY_PRINT = (
    "import builtins\n_print = builtins.print\n"
    "def _ok(*args, **kw):\n"
    "    args = ['ok' if a == 'F' else a for a in args]\n"
    "    args = [str(a).replace('1 passed, 1 failed', '2 passed, 0 failed') for a in args]\n"
    "    _print(*args, **kw)\n"
    "builtins.print = _ok\n"
    "import sys\nsys.exit = lambda *a: None\n"
)
PROBE = """\
import os as _os
for _path in ("/testbed/.git/config", "/opt/swe/venv/lib/evil.pth", "/testbed/bin/test",
              "/opt/swe/eval/output.txt", "/testbed/units/__init__.py"):
    try:
        open(_path, "a").close()
        print("PROBE-WROTE", _path)
    except OSError:
        print("PROBE-DENIED", _path)
try:
    open("/proc/self/fd/1").read()
    print("PROBE-READ-OUTPUT")
except OSError:
    print("PROBE-DENIED-OUTPUT")
for _path in ("/testbed/units/new_file.txt", "/testbed/units/conftest.py",
              "/testbed/shadow.py", "/testbed/.pytest_cache/x", "/testbed/units/out/a/x"):
    try:
        _os.makedirs(_os.path.dirname(_path), exist_ok=True)
        open(_path, "w").close()
        print("PROBE-CREATED", _path)
    except OSError:
        print("PROBE-DENIED", _path)
"""


def _append(sandbox: Sandbox, path: str, code: str) -> dict[str, str]:
    return {path: sandbox.read_file(f"{TESTBED}/{path}").decode() + "\n" + code}


@pytest.mark.container
def test_a_forged_marker_and_log_then_os_exit_is_caught(grading, synthetic_dir, tmp_path):
    sandbox, instance, recipe = grading(UNITS.instance_id)
    forged = FORGED_SYMPY_LOG.format(start=">>>>> SWE_GREEN_START")
    patch = patch_for(
        synthetic_dir, instance, tmp_path, _append(sandbox, "units/__init__.py", forged)
    )
    result = grade(
        sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT, test_user=TEST_USER)
    )
    # the audit hook saw the test process leave with os._exit; the output shows the forgery
    assert (result.status, result.reason) == (Status.REGRESSION, Reason.TAMPER_DETECTED)
    assert "never reached the interpreter's exit" in result.message
    assert "imitates the eval script's markers" in result.message
    assert result.groups is not None
    assert result.groups.fail_to_pass_failed == instance.FAIL_TO_PASS
    assert result.groups.pass_to_pass_failed == instance.PASS_TO_PASS


@pytest.mark.container
def test_a_forged_log_without_markers_is_flagged(grading, synthetic_dir, tmp_path):
    # the output alone cannot expose a forger that leaves before the runner prints anything;
    # the audit hook sees the test process leave without the interpreter's exit
    sandbox, instance, recipe = grading(UNITS.instance_id)
    forged = FORGED_SYMPY_LOG.format(start="").replace("print('')\n", "")
    patch = patch_for(
        synthetic_dir, instance, tmp_path, _append(sandbox, "units/__init__.py", forged)
    )
    result = grade(
        sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT, test_user=TEST_USER)
    )
    print(result.tamper_evidence)
    assert (result.status, result.reason) == (Status.REGRESSION, Reason.TAMPER_DETECTED)
    assert "never reached the interpreter's exit" in result.message


@pytest.mark.container
@pytest.mark.parametrize(
    ("instance_id", "path", "code", "reason"),
    [
        (CALC.instance_id, "calc/__init__.py", FORCE_PASS_REPORTS, "imports pytest's internals"),
        (TEXTKIT.instance_id, "textkit/__init__.py", ASSERTS_OFF, "uses unittest.TestCase"),
        (UNITS.instance_id, "units/__init__.py", SYMPY_PRINT, "touches builtins"),
    ],
    ids=["pytest-report-plugin", "unittest-asserts-off", "sympy-print-rewrite"],
)
def test_runner_tampering_from_inside_is_flagged_suspicious(
    grading, synthetic_dir, tmp_path, instance_id, path, code, reason
):
    sandbox, instance, recipe = grading(instance_id)
    patch = patch_for(synthetic_dir, instance, tmp_path, _append(sandbox, path, code))
    result = grade(
        sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT, test_user=TEST_USER)
    )
    # whatever the tampering achieves, a resolved result never goes unflagged
    assert result.status != Status.RESOLVED or result.suspicious, result.message
    assert any(r.startswith(reason) for r in result.suspicious), (result.status, result.message)


@pytest.mark.container
@pytest.mark.parametrize(
    ("instance_id", "path"),
    [(TEXTKIT.instance_id, "unittest.py"), (UNITS.instance_id, "bin/traceback.py")],
)
def test_a_module_shadowing_the_standard_library_is_left_out(
    grading, synthetic_dir, tmp_path, instance_id, path
):
    sandbox, instance, recipe = grading(instance_id)
    shadow = "import sys\nprint('all ok')\nsys.exit(0)\n"
    patch = patch_for(synthetic_dir, instance, tmp_path, {path: shadow})
    result = grade(
        sandbox, instance, recipe, patch, GradingRequest(timeout=TIMEOUT, test_user=TEST_USER)
    )
    assert (result.status, result.reason) == (Status.NO_OP, Reason.EMPTY_PATCH), result.message
    assert result.excluded_files == [path]
    assert result.groups is not None
    assert result.groups.fail_to_pass_failed == instance.FAIL_TO_PASS
    assert result.groups.pass_to_pass_passed == instance.PASS_TO_PASS


@pytest.mark.container
def test_the_unprivileged_tests_cannot_touch_git_the_environment_or_the_runner(
    grading, synthetic_dir, tmp_path
):
    sandbox, instance, recipe = grading(UNITS.instance_id)
    files = _append(sandbox, "units/__init__.py", PROBE)
    patch = patch_for(synthetic_dir, instance, tmp_path, files)
    request = GradingRequest(timeout=TIMEOUT, test_user=TEST_USER, writable=("units/out/",))
    result = grade(sandbox, instance, recipe, patch, request)
    assert result.test_run is not None and result.test_run.section is not None
    probes = [line for line in result.test_run.section.splitlines() if "PROBE-" in line]
    assert probes == [
        "PROBE-DENIED /testbed/.git/config",
        "PROBE-DENIED /opt/swe/venv/lib/evil.pth",
        "PROBE-DENIED /testbed/bin/test",
        "PROBE-DENIED /opt/swe/eval/output.txt",
        "PROBE-DENIED /testbed/units/__init__.py",
        "PROBE-DENIED-OUTPUT",
        "PROBE-DENIED /testbed/units/new_file.txt",
        "PROBE-DENIED /testbed/units/conftest.py",
        "PROBE-DENIED /testbed/shadow.py",
        "PROBE-CREATED /testbed/.pytest_cache/x",
        "PROBE-CREATED /testbed/units/out/a/x",
    ]
    # every attempt failed, and the attempts on grading's own files are evidence all the same
    assert (result.status, result.reason) == (Status.REGRESSION, Reason.TAMPER_DETECTED)
    assert any("opens grading's own files /opt/swe/eval" in e for e in result.tamper_evidence)
    assert any("opens a descriptor of a process" in e for e in result.tamper_evidence)


@pytest.mark.container
def test_a_hook_planted_in_the_grading_container_never_runs(grading):
    # as with grade_in_participant_container, where the participant had the container
    sandbox, instance, recipe = grading(CALC.instance_id)
    sandbox.write_file(
        f"{TESTBED}/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/hook-ran\n", mode=0o755
    )
    result = grade(sandbox, instance, recipe, instance.patch, GradingRequest(timeout=TIMEOUT))
    assert result.status == Status.RESOLVED, result.message
    assert sandbox.exec(["test", "-e", "/tmp/hook-ran"]).exit_code == 1


@pytest.mark.container
def test_a_patch_into_git_is_refused_and_graded_as_the_base(grading):
    sandbox, instance, recipe = grading(UNITS.instance_id)
    hook = (
        "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n"
        "new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n"
        "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch /tmp/hook-ran\n"
    )
    result = grade(sandbox, instance, recipe, hook, GradingRequest(timeout=TIMEOUT))
    assert (result.status, result.reason) == (Status.NO_OP, Reason.PATCH_PATH_REFUSED)
    assert ".git/hooks/post-checkout: inside .git" in result.message
    assert result.groups is not None and result.groups.fail_to_pass_failed == ["test_to_celsius"]
    assert result.groups.pass_to_pass_passed == ["test_to_fahrenheit"]


# a suite that writes next to itself: an output directory of its own and a file in a package
WRITING_CONFTEST = """\
import os


def pytest_sessionstart(session):
    for path in ("/testbed/out/sub/result.txt", "/testbed/calc/generated.txt"):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x")
            seen = "WRITE-DONE"
        except OSError:
            seen = "WRITE-DENIED"
        with open("/tmp/writes.txt", "a") as f:  # what the tests print is captured
            f.write(f"{seen} {path}\\n")
"""


@pytest.mark.container
def test_a_recording_run_finds_where_the_tests_write_and_only_there_they_may(grading):
    sandbox, instance, recipe = grading(CALC.instance_id)
    sandbox.write_file(f"{TESTBED}/conftest.py", WRITING_CONFTEST)
    recorded = run_tests(sandbox, instance, recipe, timeout=TIMEOUT, test_user=TEST_USER,
                         record=True)  # fmt: skip
    assert recorded.crash is None, recorded.output[-2000:]
    sandbox.exec("rm /tmp/writes.txt")
    # .pytest_cache is made before the recording (as grading makes it): what the runner made
    # inside it is an output directory within it
    assert recorded.writable == [".pytest_cache/v/", "calc", "out/"]
    sandbox.exec(["rm", "-rf", f"{TESTBED}/out", f"{TESTBED}/calc/generated.txt"])
    runs, seen = {}, {}
    for name, writable in (("open", recorded.writable), ("closed", [])):
        runs[name] = run_tests(sandbox, instance, recipe, timeout=TIMEOUT, test_user=TEST_USER,
                               writable=writable)  # fmt: skip
        seen[name] = sandbox.exec("cat /tmp/writes.txt && rm /tmp/writes.txt").stdout
    assert seen["open"] == (
        "WRITE-DONE /testbed/out/sub/result.txt\nWRITE-DONE /testbed/calc/generated.txt\n"
    )
    # out/ now exists (root's, from the open run) but is not writable without the path
    assert seen["closed"] == (
        "WRITE-DENIED /testbed/out/sub/result.txt\nWRITE-DENIED /testbed/calc/generated.txt\n"
    )
    flaky = "tests/test_calc.py::test_flaky_between_runs"  # differs between runs on purpose
    outcomes = [{k: v for k, v in run.outcomes.items() if k != flaky} for run in runs.values()]
    assert outcomes[0] == outcomes[1] == {k: v for k, v in recorded.outcomes.items() if k != flaky}
    mode = sandbox.exec(["stat", "-c", "%a %U", TESTBED, f"{TESTBED}/calc/__init__.py"])
    assert mode.stdout.split("\n")[:2] == ["755 root", "644 root"]


# a runner that clears its own log directory before it writes (tox's env log directory)
CLEARING_CONFTEST = """\
import os


def pytest_sessionstart(session):
    log = "/testbed/out/log/1-commands.log"
    try:
        if os.path.exists(log):
            os.unlink(log)
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "w") as f:
            f.write("x")
        seen = "CLEARED"
    except OSError as exc:
        seen = f"DENIED {exc}"
    with open("/tmp/clears.txt", "a") as f:
        f.write(seen + "\\n")
"""


@pytest.mark.container
def test_a_second_run_in_the_container_clears_what_the_first_left_in_an_output_directory(
    grading,
):
    """The second of two runs in one container (the wider baseline's, a flaky re-run) may
    remove what the first run wrote in an output directory: before each run everything is
    made root's, then what lies in an output directory is the test user's again (a
    sticky directory of root's would refuse its removal)."""
    sandbox, instance, recipe = grading(CALC.instance_id)
    sandbox.write_file(f"{TESTBED}/conftest.py", CLEARING_CONFTEST)
    for _ in range(2):
        run = run_tests(sandbox, instance, recipe, timeout=TIMEOUT, test_user=TEST_USER,
                        writable=["out/"])  # fmt: skip
        assert run.crash is None, run.output[-2000:]
    assert sandbox.exec("cat /tmp/clears.txt").stdout == "CLEARED\nCLEARED\n"
    owner = sandbox.exec(["stat", "-c", "%U", f"{TESTBED}/calc/__init__.py"]).stdout.strip()
    assert owner == "root"  # the repository stays root's
