"""Tasks whose tests are data: a fix whose test part adds a data file that a parametrized test
module reads (through a conftest helper), collected with the modules that read it and a
``-k`` selection of its name, then validated in its inferred environment: the new case is the
FAIL_TO_PASS test, and the cases beside it do not run. The pure readers beside."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe, directives_of
from orchestrator.recipes.selection import selected_directives
from orchestrator.tasks.collect import collect
from orchestrator.tasks.data_tests import data_paths, k_term, reading_modules
from orchestrator.tasks.statements import NoIssues
from tests.test_infer import git, make_repo

PYPROJECT = (
    '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    '\n[project]\nname = "calc"\nversion = "0.1"\n'
    '\n[project.optional-dependencies]\ntest = ["pytest"]\n'
)
BUGGY = (
    "def mul(a, b):\n    result = 0\n    for _ in range(b):\n        result += a\n"
    "    return result\n"
)
FIXED = "def mul(a, b):\n    return a * b\n"
CONFTEST = (
    "import os\n\n\n"
    "def load_cases():\n"
    '    folder = os.path.join("tests", "data", "cases")\n'
    '    return sorted(name[:-4] for name in os.listdir(folder) if name.endswith(".txt"))\n\n\n'
    "def read_case(name):\n"
    '    with open(os.path.join("tests", "data", "cases", name + ".txt")) as f:\n'
    "        return [int(word) for word in f.read().split()]\n"
)
CASES_TEST = (
    "import pytest\n\nfrom calc import mul\n\nfrom .conftest import load_cases, read_case\n\n\n"
    '@pytest.mark.parametrize("name", load_cases())\n'
    "def test_case(name):\n    a, b, want = read_case(name)\n    assert mul(a, b) == want\n"
)
OTHER_TEST = "from calc import mul\n\n\ndef test_zero():\n    assert mul(0, 5) == 0\n"


def _repository(root: Path) -> Path:
    """A project whose fix (#1042) adds only a data file to its tests; its bare mirror."""
    make_repo(
        root,
        {"pyproject.toml": PYPROJECT, "calc/__init__.py": BUGGY, "tests/__init__.py": "",
         "tests/conftest.py": CONFTEST, "tests/test_cases.py": CASES_TEST,
         "tests/test_other.py": OTHER_TEST, "tests/data/cases/double.txt": "2 3 6\n"},
        "2025-01-01T00:00:00Z",
    )  # fmt: skip
    make_repo(
        root,
        {"calc/__init__.py": FIXED, "tests/data/cases/negative_factor.txt": "3 -2 -6\n"},
        "2025-02-01T00:00:00Z",
    )
    git("commit", "--amend", "-q", "-m", "Fix mul with a negative factor (#1042)", cwd=root,
        when="2025-02-01T00:00:00Z")  # fmt: skip
    mirror = root.parent / "mirrors" / "acme__cases.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(mirror)], check=True)
    return mirror


def test_the_modules_reading_changed_test_data_are_found() -> None:
    sources = {
        "test/conftest.py": (
            'def dialect_fixtures():\n    return os.path.join("test", "fixtures", "dialects")\n'
        ),
        "test/dialects/dialects_test.py": "from ..conftest import dialect_fixtures\n",
        "test/cli/commands_test.py": 'ARGS = ["test/fixtures/cli/fail_many.sql"]\n',
        "test/core/parity.py": 'DIR = ROOT / "fixtures" / "dialects"\n',
        "test/core/parity_test.py": "from .parity import DIR\nimport parity\n",
        "test/core/unrelated_test.py": "DIR = 1\n",
    }  # fmt: skip
    modules, folder = reading_modules(sources, "test/fixtures/dialects/tsql/create_view.sql")
    assert modules == ["test/core/parity_test.py", "test/dialects/dialects_test.py"]
    assert folder == "test/fixtures/dialects"
    assert k_term("test/fixtures/dialects/tsql/create_view.sql", folder) == "tsql and create_view"
    assert k_term("test/fixtures/dialects/my-dialect/or.sql", folder) == "my and dialect"
    assert k_term("test/fixtures/dialects/LT02-indent-oracle.yml", folder) == (
        "LT02 and indent and oracle"
    )  # pytest before 6 takes no "-" in -k: each word instead
    assert k_term("test/fixtures/dialects/01/and.yml", folder) == ""
    assert reading_modules(sources, "test/fixtures/cli/new.sql") == (
        ["test/cli/commands_test.py"], "test/fixtures/cli",
    )  # fmt: skip
    assert reading_modules(sources, "docs/data/x.yml") == ([], "")
    assert data_paths(["test/x.yml", "test/x_test.py", "src/a.yml"]) == ["test/x.yml"]


def test_a_task_of_test_data_selects_its_own_tests() -> None:
    task = Instance(instance_id="a__b-1", repo="a/b", base_commit="c",
                    environment_setup_commit="c", test_patch="diff --git a/t/x.sql b/t/x.sql\n",
                    test_directives=["t/a_test.py", "-k", "x"])  # fmt: skip
    assert directives_of(task) == ["t/a_test.py", "-k", "x"]
    recipe = Recipe(repo="a/b", version="1", python="3.11", install="true", test_cmd="pytest -rA",
                    log_format="pytest")  # fmt: skip
    chosen = selected_directives(recipe, task, ["t/a_test.py::test_parse[x]"])
    assert chosen == ["t/a_test.py::test_parse", "-k", "x"]  # its other cases stay out


def test_a_fix_whose_tests_are_data_is_a_candidate(tmp_path: Path) -> None:
    mirror = _repository(tmp_path / "cases")
    candidates, report = collect(mirror, "acme/cases", "", "", NoIssues())
    assert (report.mode, report.changes, report.rejected) == ("pull requests", 1, [])
    (candidate,) = candidates
    assert candidate.test_directives == ["tests/test_cases.py", "-k", "negative_factor"]
    assert "negative_factor.txt" in candidate.test_patch and "calc/" in candidate.patch


@pytest.mark.container
def test_a_task_of_test_data_validates_on_its_new_case_alone(run_ctx, tmp_path: Path) -> None:
    from orchestrator.tasks.validate import validate_candidate

    mirror = _repository(tmp_path / "cases")
    (candidate,) = collect(mirror, "acme/cases", "", "", NoIssues())[0]
    run_ctx.settings = run_ctx.settings.replace(setup_strategy="infer", mirror_dir=mirror.parent)
    record, task = validate_candidate(run_ctx, candidate)
    assert record.kept, record.reason
    assert task is not None
    assert task.FAIL_TO_PASS == ["tests/test_cases.py::test_case[negative_factor]"]
    assert task.PASS_TO_PASS == []  # the other case and the other module did not run
