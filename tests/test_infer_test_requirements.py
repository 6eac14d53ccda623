"""Where the inference finds a project's test requirements beyond ``[project]`` and a
literal ``setup()`` call: setup.py dictionaries built up from literals, PEP 735 dependency
groups (with ``include-group``), tox's ``extras`` and ``dependency_groups``; and what it
could not read, said in the plan (real git repositories made in a temporary directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.setup.infer.packaging_files import (
    Packaging,
    dependency_groups,
    read_setup_py,
    tox_names,
)
from tests.test_infer import make_repo, plan_of

# the shape of a setup.py that computes its test extra from another (attrs' of 2021)
SETUP_PY_BUILT_UP = """
import sys
from setuptools import setup
EXTRAS_REQUIRE = {
    "docs": ["sphinx"],
    "tests_no_zope": ["hypothesis", "pympler", "pytest>=4.3.0"],
}
if sys.version_info[:2] >= (3, 6):
    EXTRAS_REQUIRE["tests_no_zope"].extend(["mypy", "pytest-mypy-plugins"])
else:
    EXTRAS_REQUIRE["tests_no_zope"].append("never-on-python-3")
EXTRAS_REQUIRE["tests"] = EXTRAS_REQUIRE["tests_no_zope"] + ["zope.interface"]
EXTRAS_REQUIRE["dev"] = EXTRAS_REQUIRE["tests"] + EXTRAS_REQUIRE["docs"]
BASE = ["six"]
BASE += ["attrs"]
EXTRAS_REQUIRE.update({"speedups": ["ujson"]})
setup(name="widget", install_requires=BASE, extras_require=EXTRAS_REQUIRE)
"""

TOX_EXTRAS = """
[tox]
envlist = py39,docs

[testenv]
extras = {env:TOX_AP_TEST_EXTRAS:tests}
commands = python -m pytest {posargs}
"""


def test_a_setup_py_dictionary_built_up_from_literals_is_read() -> None:
    facts = Packaging()
    read_setup_py(SETUP_PY_BUILT_UP, facts, set())
    assert facts.extras["tests"] == [
        "hypothesis", "pympler", "pytest>=4.3.0", "mypy", "pytest-mypy-plugins", "zope.interface",
    ]  # fmt: skip
    assert "never-on-python-3" not in facts.extras["tests_no_zope"]
    assert facts.extras["dev"][-1] == "sphinx"
    assert facts.extras["speedups"] == ["ujson"]
    assert facts.install_requires == ["six", "attrs"]
    assert facts.unread == []


def test_tox_extras_choose_the_extra_and_its_requirements_install(tmp_path: Path) -> None:
    commit = make_repo(
        tmp_path, {"setup.py": SETUP_PY_BUILT_UP, "tox.ini": TOX_EXTRAS}, "2021-06-01T00:00:00Z"
    )
    plan = plan_of(tmp_path, commit)
    assert plan.requirements[0] == ".[tests]"
    assert "hypothesis" in plan.recipe.install  # the extra's requirements, one by one too
    assert any("extras: tests (tox.ini [testenv] extras)" in r for r in plan.reasons)


def test_a_computed_extras_require_is_named_as_not_read(tmp_path: Path) -> None:
    setup_py = (
        "from setuptools import setup\n"
        "def extras():\n    return {'tests': ['hypothesis']}\n"
        "setup(name='widget', extras_require=extras())\n"
    )
    tox = "[testenv]\nextras =\n    tests\n    docs: docs\n"
    commit = make_repo(tmp_path, {"setup.py": setup_py, "tox.ini": tox}, "2021-06-01T00:00:00Z")
    plan = plan_of(tmp_path, commit)
    assert plan.requirements[0] == "."
    assert any("setup.py extras_require: extras() is computed" in u for u in plan.unread)
    assert any("tox.ini [testenv] extras tests: not defined" in u for u in plan.unread)
    assert "not read:     setup.py extras_require" in plan.text()


PYPROJECT_GROUPS = """
[project]
name = "widget"
requires-python = ">=3.9"

[dependency-groups]
tests = ["hypothesis", "pytest>9", {include-group = "fixtures"}]
fixtures = ["pympler"]
lint = ["ruff"]
mypy = [{include-group = "tests"}, "pytest-mypy-plugins"]
broken = [{include-group = "nowhere"}, {include-group = "broken"}]
"""


def test_dependency_groups_resolve_their_includes() -> None:
    import tomllib

    groups, unread = dependency_groups(tomllib.loads(PYPROJECT_GROUPS)["dependency-groups"])
    assert groups["tests"] == ["hypothesis", "pytest>9", "pympler"]
    assert groups["mypy"] == ["hypothesis", "pytest>9", "pympler", "pytest-mypy-plugins"]
    assert groups["broken"] == []
    assert sorted(unread) == [
        "pyproject.toml dependency group broken: includes broken (a cycle)",
        "pyproject.toml dependency group broken: includes nowhere (no such group)",
    ]


@pytest.mark.parametrize(
    ("tox", "group"),
    [
        ("", "tests"),  # no tox: the group named for tests
        ("[testenv]\ndependency_groups =\n    tests: mypy\n    docs: lint\n", "mypy"),
    ],
)
def test_the_test_dependency_group_is_installed(tmp_path: Path, tox: str, group: str) -> None:
    files = {"pyproject.toml": PYPROJECT_GROUPS} | ({"tox.ini": tox} if tox else {})
    commit = make_repo(tmp_path, files, "2026-01-01T00:00:00Z")
    plan = plan_of(tmp_path, commit)
    assert "hypothesis" in plan.requirements
    assert "pympler" in plan.requirements  # through include-group
    assert "ruff" not in plan.requirements
    assert ("pytest-mypy-plugins" in plan.requirements) == (group == "mypy")
    assert any(f"dependency group {group} (pyproject.toml)" in r for r in plan.reasons)


def test_tox_names() -> None:
    assert tox_names("{env:EXTRAS:tests}") == ["tests"]
    assert tox_names("tests, speedups") == ["tests", "speedups"]
    assert tox_names("\ntests: tests\ndocs: docs\n!docs: fast\n") == ["tests", "fast"]
    assert tox_names("") == []
