"""The inferred set-up strategy on small synthetic repositories (real git repositories made
in a temporary directory, read at a commit through git as the product reads its mirrors)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from orchestrator.sandbox.scripts import render
from orchestrator.setup.infer.inference import (
    EDITABLE_BUILD_TOOLS,
    cimported_distributions,
    exempt_until,
    infer_plan,
    resolution_cutoffs,
    runner_install,
)
from orchestrator.setup.infer.packaging_files import (
    Packaging,
    ci_pythons,
    read_setup_py,
    requirements_file,
    tox_pythons,
)
from orchestrator.setup.infer.repo_files import RepoFiles
from orchestrator.setup.scripts import environment_script
from tests.cli_in_process import swe_green

AVAILABLE = ["3.9", "3.11", "3.13"]


def git(*args: str, cwd: Path, when: str = "2020-01-01T00:00:00Z") -> str:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when,
    }  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


def make_repo(root: Path, files: dict[str, str], when: str) -> str:
    """A commit of ``files`` (on top of what the repository has) at ``when``; its id."""
    if not (root / ".git").exists():
        root.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "-b", "main", cwd=root)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "c", cwd=root, when=when)
    return git("rev-parse", "HEAD", cwd=root)


def plan_of(root: Path, commit: str, available: list[str] = AVAILABLE):  # noqa: ANN201
    return infer_plan(RepoFiles(root, commit), "acme/widget", "1.0", available)


PYPROJECT = """
[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "widget"
requires-python = ">=3.10"
dependencies = ["attrs>=21"]
classifiers = [
  "Programming Language :: Python :: 3.10",
  "Programming Language :: Python :: 3.11",
  "Programming Language :: Python :: 3.12",
]

[project.optional-dependencies]
test = ["hypothesis", "pytest>=7"]
docs = ["sphinx"]

[tool.pytest.ini_options]
addopts = "-ra"
"""


def test_pyproject_project_gets_its_newest_declared_python_and_test_extra(tmp_path: Path) -> None:
    commit = make_repo(tmp_path, {"pyproject.toml": PYPROJECT, "widget/__init__.py": ""},
                       "2024-03-01T10:00:00Z")  # fmt: skip
    plan = plan_of(tmp_path, commit)
    recipe = plan.recipe
    assert recipe.python == "3.11"  # 3.13 is not declared, 3.9 not allowed
    assert "-C editable_mode=compat -e '.[test]'" in recipe.install  # sys.path, as develop
    assert (recipe.test_cmd, recipe.log_format) == ("pytest -rA", "pytest")
    assert plan.cutoffs == ["2024-03-01T10:00:00Z", ""]  # 3.11 was out long before
    assert '--exclude-newer "$1"' in recipe.install
    assert "sphinx" not in recipe.install  # the docs extra is not the tests'
    assert plan.build_first == []  # the [build-system] is built in isolation
    assert any("configured in pyproject.toml" in r for r in plan.reasons)
    assert "pyproject.toml" in plan.sources


SETUP_PY = """
import os
import numpy
from setuptools import setup, Extension
try:
    from Cython.Build import cythonize
except ImportError:
    cythonize = None

open(os.path.join(os.path.dirname(__file__) or ".", "SETUP_RAN"), "w").write("ran")
REQUIRES = ["six", "numpy>=1.8"]

def helper():
    import pytest

setup(
    name="widget",
    install_requires=REQUIRES,
    tests_require=["mock"] + ["nose"],
    extras_require={"testing": ["pytest", "flake8"]},
    ext_modules=[Extension("widget._speed", ["widget/_speed.c"])],
)
"""


def test_setup_py_is_read_without_running_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    commit = make_repo(work, {"setup.py": SETUP_PY, "widget/__init__.py": "",
                              "widget/_speed.c": ""}, "2016-05-02T08:00:00Z")  # fmt: skip
    plan = plan_of(work, commit)
    assert not (work / "SETUP_RAN").exists()
    assert not list(tmp_path.rglob("SETUP_RAN"))
    # numpy is imported at the top: built without isolation on it, and on a setuptools that
    # makes editable installs; Cython is optional (try) and pytest only imported in a
    # function nothing calls
    assert plan.build_first == ["numpy", *EDITABLE_BUILD_TOOLS]
    assert "--no-build-isolation-package widget" in plan.recipe.install
    assert "-e '.[testing]'" in plan.recipe.install  # pip's
    # uv builds a bare path's metadata in isolation to learn its name: it is named
    assert "-e 'widget[testing] @ .'" in plan.recipe.install
    assert "mock" in plan.requirements and "nose" in plan.requirements
    # 2016: no available Python was out yet: the oldest, then its settled date
    assert plan.recipe.python == "3.9"
    assert plan.cutoffs == ["2016-05-02T08:00:00Z", "2021-04-06T00:00:00Z", ""]
    assert any("compiled extensions" in r for r in plan.reasons)


LEGACY_SETUP_PY = """
import sys
from setuptools.command.build_ext import build_ext
from setuptools.command.test import test as TestCommand
try:
    import builtins
except ImportError:
    import __builtin__ as builtins  # Python 2
if sys.version_info[0] < 3:
    import ConfigParser
    import futures_backport
else:
    import configparser
if six.PY2:
    import py2_only
if sys.version_info[:2] >= (3, 0):
    pass
else:
    import also_py2_only
try:
    import optional_speedups
except ImportError:
    optional_speedups = None
try:
    import cffi
except ImportError:
    raise SystemExit("cffi is needed to build")

NAME = "widget"
RELEASE_COMMANDS = {"fetch_artifacts", "upload_all"}
if RELEASE_COMMANDS.intersection(sys.argv):
    import wheelhouse_uploader.cmd
if sys.argv[-1] == "publish":
    import twine
if "develop" in sys.argv or "bdist_wheel" in sys.argv:
    import build_helper

class PyTest(TestCommand):
    def run_tests(self):
        import pytest

class BuildExt(build_ext):
    def finalize_options(self):
        import pybind11

def configuration(parent_package="", top_path=None):
    from numpy.distutils.misc_util import Configuration
    return Configuration(None, parent_package, top_path)

def never_called():
    import pandas

def setup_package():
    metadata = dict(name=NAME, python_requires=">=3.5",
                    cmdclass={"test": PyTest, "build_ext": BuildExt})
    if len(sys.argv) >= 2 and sys.argv[1] in ("--help-commands", "egg_info", "clean"):
        from setuptools import setup
    else:
        from numpy.distutils.core import setup
        metadata["configuration"] = configuration
    setup(**metadata)

if __name__ == "__main__":
    setup_package()
"""


def test_setup_py_build_imports_are_those_of_the_code_a_build_runs() -> None:
    facts = Packaging()
    read_setup_py(LEGACY_SETUP_PY, facts, {"widget"})
    # not: Python 2's branches and stdlib (__builtin__, ConfigParser), optional imports and
    # their fallbacks, release commands' imports (wheelhouse_uploader, twine), a test
    # command's pytest, a function nothing calls; yes: what the functions the module calls
    # import (numpy), a build command's methods (pybind11), a required import (cffi), a
    # branch for build commands (build_helper)
    assert facts.setup_imports == ["build_helper", "cffi", "numpy", "pybind11"]
    # setup(**metadata): the dictionary's literal keywords
    assert (facts.name, facts.python_requires) == ("widget", ">=3.5")


def test_a_python_version_test_that_depends_on_the_python_keeps_its_imports() -> None:
    facts = Packaging()
    text = "import sys\nif sys.version_info < (3, 8):\n    import importlib_metadata\n"
    read_setup_py(text, facts, set())
    assert facts.setup_imports == ["importlib_metadata"]
    for dead in ("sys.version < '3'", "sys.version_info.major == 2", "not PY3"):
        facts = Packaging()
        read_setup_py(f"import sys\nif {dead}:\n    import py2_only\n", facts, set())
        assert facts.setup_imports == [], dead


def test_a_legacy_numpy_build_gets_numpy_what_its_cython_cimports_and_an_editable_setuptools(
    tmp_path: Path,
) -> None:
    pyx = (
        "from cython cimport floating\nfrom libc.math cimport sqrt\n"
        "from scipy.linalg.cython_blas cimport dgemm\ncimport numpy as np\n"
        "from typedefs cimport DTYPE_t\nfrom widget.utils._helpers cimport helper\n"
    )
    files = {"setup.py": LEGACY_SETUP_PY, "widget/__init__.py": "",
             "widget/neighbors/_tree.pyx": pyx, "widget/neighbors/typedefs.pxd": "",
             "widget/utils/_helpers.pxd": ""}  # fmt: skip
    plan = plan_of(tmp_path, make_repo(tmp_path, files, "2019-05-15T00:00:00Z"))
    assert plan.build_first == [
        "build_helper", "cffi", "numpy", "pybind11", "cython", "scipy", *EDITABLE_BUILD_TOOLS
    ]  # fmt: skip
    assert "--no-build-isolation-package widget" in plan.recipe.install  # its name, read
    assert any("the Cython sources cimport them" in r for r in plan.reasons)
    assert cimported_distributions(RepoFiles(tmp_path, "HEAD")) == ["scipy", "numpy"]


def test_tox_and_requirements_files_give_the_test_requirements(tmp_path: Path) -> None:
    files = {
        "setup.cfg": "[metadata]\nname = widget\n[options]\npython_requires = >=3.8\n"
        "install_requires =\n    requests\n",
        "setup.py": "from setuptools import setup\nsetup()\n",
        "tox.ini": "[tox]\nenvlist = py{38,39}, lint\n[testenv]\ndeps =\n"
        "    -rrequirements-test.txt\n    py38: oldlib==1.0\n    responses\n"
        "    {[base]deps}\n[pytest]\naddopts = --cov=widget\n",
        "requirements-test.txt": "# tests\n-e .\npytest==3.0\nfreezegun>=0.3 \\\n"
        "  --hash=sha256:abc\ngit+https://example.com/x.git#egg=x\nflake8\n-r more.txt\n",
        "more.txt": "trustme\n",
        "requirements-docs.txt": "sphinx\n",
    }
    commit = make_repo(tmp_path, files, "2021-02-01T00:00:00Z")
    plan = plan_of(tmp_path, commit)
    assert plan.recipe.python == "3.9"  # declared 3.8, 3.9; 3.11 was not
    reqs = plan.requirements
    assert "freezegun>=0.3" in reqs and "trustme" in reqs and "responses" in reqs
    assert "oldlib==1.0" not in reqs  # only for one tox environment
    assert not any(r.startswith(("flake8", "sphinx", "git+")) for r in reqs)
    assert not any(r.startswith("pytest==") for r in reqs)  # the runner follows the Python
    assert plan.runner == "pytest>=6.2.0 as of 2021-03-12T00:00:00Z"
    assert "add 'pytest>=6.2.0'" in plan.recipe.install
    assert "pytest-cov" in reqs  # addopts use --cov
    assert "requirements-test.txt" in plan.sources


def test_tox_deps_for_a_test_factor_are_the_tests_requirements(tmp_path: Path) -> None:
    """tox's deps conditional on a test factor (``tests: -rtests/requirements.txt``) are
    the tests' requirements, as its extras on one are, beside the extras tox installs."""
    files = {
        "setup.py": "from setuptools import setup\nsetup(name='widget', "
        "extras_require={'pandas': ['pandas']})\n",
        "tox.ini": "[tox]\nenvlist = py{37,38}\n[testenv]\nextras = pandas\ndeps =\n"
        "    tests: -rtests/requirements.txt\n    docs: sphinx\n    py37: oldlib==1.0\n"
        "    !docs: responses\n",
        "tests/requirements.txt": "pytest\nMarkupPy\nodfpy\n",
    }
    plan = plan_of(tmp_path, make_repo(tmp_path, files, "2019-11-11T00:00:00Z"))
    reqs = plan.requirements
    assert reqs[0] == ".[pandas]"
    assert {"MarkupPy", "odfpy", "responses"} <= set(reqs)
    assert not {"sphinx", "oldlib==1.0"} & set(reqs)


def test_ci_matrix_decides_the_python(tmp_path: Path) -> None:
    workflow = (
        "jobs:\n  test:\n    strategy:\n      matrix:\n"
        "        python-version: [3.9, 3.10, '3.11']\n"
    )
    setup = "from setuptools import setup\nsetup(name='w')\n"
    files = {".github/workflows/ci.yml": workflow, "setup.py": setup}
    commit = make_repo(tmp_path, files, "2023-06-01T00:00:00Z")
    plan = plan_of(tmp_path, commit)
    assert plan.recipe.python == "3.11"
    assert ".github/workflows/ci.yml" in plan.sources
    # without 3.11 on the host, the nearest declared one
    assert plan_of(tmp_path, commit, ["3.13"]).recipe.python == "3.13"


def test_repository_runners_are_recognised(tmp_path: Path) -> None:
    sympy = make_repo(tmp_path / "s", {"bin/test": "#!/usr/bin/env python\nimport sympy\n",
                                       "setup.py": "from setuptools import setup\nsetup()\n"},
                      "2019-01-01T00:00:00Z")  # fmt: skip
    recipe = plan_of(tmp_path / "s", sympy).recipe
    assert recipe.log_format == "sympy" and "bin/test -C --verbose" in recipe.test_cmd
    django = make_repo(
        tmp_path / "d",
        {"tests/runtests.py": "import django\n", "tests/requirements/py3.txt": "asgiref\n",
         "setup.py": "from setuptools import setup\nsetup(name='Django')\n"},
        "2020-01-01T00:00:00Z",
    )  # fmt: skip
    plan = plan_of(tmp_path / "d", django)
    assert plan.recipe.log_format == "django"
    assert plan.recipe.test_cmd.startswith("./tests/runtests.py")
    assert "asgiref" in plan.requirements and "pytest" not in plan.requirements


def test_the_python_prints_the_tasks_unittest_names_as_they_are_written(tmp_path: Path) -> None:
    setup = "from setuptools import setup\nsetup(name='w', python_requires='>=3.8')\n"
    workflow = "jobs:\n  t:\n    strategy:\n      matrix:\n        python: ['3.9', '3.11']\n"
    commit = make_repo(tmp_path, {"setup.py": setup, ".github/workflows/ci.yml": workflow},
                       "2023-06-01T00:00:00Z")  # fmt: skip
    files = RepoFiles(tmp_path, commit)

    def python(names: list[str]) -> str:
        return infer_plan(files, "acme/w", "1.0", AVAILABLE, names).recipe.python

    assert python([]) == "3.11"  # the newest it declares
    # unittest before 3.11 prints "test_x (pkg.Class)", from 3.11 on "test_x (pkg.Class.test_x)"
    assert python(["test_x (basic.tests.ManagerTest)"]) == "3.9"
    assert python(["test_x (basic.tests.ManagerTest.test_x)"]) == "3.11"
    plan = infer_plan(files, "acme/w", "1.0", AVAILABLE, ["test_a (m.C)", "test_b (m.D)"])
    assert any("(module.Class)" in r for r in plan.reasons)
    # pytest ids, sympy names, mixed styles, or no fitting Python: the usual choice
    assert python(["tests/test_w.py::test_x", "test_y"]) == "3.11"
    assert python(["test_x (m.C)", "test_y (m.C.test_y)"]) == "3.11"
    assert infer_plan(files, "acme/w", "1.0", ["3.11", "3.13"], ["t (m.C)"]).recipe.python == "3.11"


def test_a_legacy_build_on_numpys_c_api_gets_numpy_first(tmp_path: Path) -> None:
    setup = "from setuptools import setup\nfrom helpers import get_package_info\nsetup(name='w')\n"
    uses = "def get_extensions():\n    import numpy\n    return []\n"
    files = {"setup.py": setup, "w/__init__.py": "", "w/_x.c": "", "w/io/setup_package.py": uses}
    commit = make_repo(tmp_path, files, "2019-01-01T00:00:00Z")
    plan = plan_of(tmp_path, commit)
    assert "numpy" in plan.build_first
    assert any("w/io/setup_package.py uses it" in r for r in plan.reasons)
    # no compiled extension: numpy stays a runtime requirement
    files = {"setup.py": setup, "w/__init__.py": "", "w/setup_package.py": uses}
    pure = make_repo(tmp_path / "p", files, "2019-01-01T00:00:00Z")
    assert "numpy" not in plan_of(tmp_path / "p", pure).build_first


def test_the_commit_not_the_branch_is_read(tmp_path: Path) -> None:
    old = make_repo(tmp_path, {"setup.cfg": "[options]\npython_requires = >=3.12\n"},
                    "2025-01-01T00:00:00Z")  # fmt: skip
    make_repo(tmp_path, {"setup.cfg": "[options]\npython_requires = <3.10\n"},
              "2025-02-01T00:00:00Z")  # fmt: skip
    files = RepoFiles(tmp_path, old)
    assert files.commit_time == datetime(2025, 1, 1, tzinfo=UTC)
    assert plan_of(tmp_path, old).recipe.python == "3.13"


FAKE_UV = """#!/bin/bash
# uv as the install sees it: every call logged; what is as of 2016 or names bad-lib fails
echo "$*" >> "$UV_CALLS"
# new-lib: nothing of the Python's settled date installs it (no wheel; its sources do not build)
case "$*" in *"--exclude-newer 2016"*|*bad-lib*|*"--exclude-newer 2021"*new-lib*) exit 1;; esac
"""


def _run_install(
    tmp_path: Path, install: str, mkdir: bool = True, fake_uv: str = FAKE_UV
) -> tuple[subprocess.CompletedProcess[str], str]:
    """``install`` run by bash with ``fake_uv`` as uv (every call logged in the calls file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=not mkdir)
    (bin_dir / "uv").write_text(fake_uv)
    (bin_dir / "uv").chmod(0o755)
    calls = tmp_path / "calls"
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "UV_CALLS": str(calls),
                        "PIP_CONSTRAINT": "/c.txt"}  # fmt: skip
    done = subprocess.run(["bash", "-c", install], env=env, capture_output=True, text=True)
    return done, calls.read_text()


def test_the_install_tries_each_cutoff_then_each_requirement(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    setup = "import numpy\nfrom setuptools import setup\nsetup(name='widget')\n"
    files = {"setup.py": setup, "requirements-test.txt": "bad-lib\nok-lib\nnew-lib\n"}
    commit = make_repo(work, files, "2016-05-02T08:00:00Z")
    install = plan_of(work, commit).recipe.install
    done, calls = _run_install(tmp_path, install)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # the commit's date fails (the fake's rule), the Python's settled date fails (bad-lib),
    # so does no cut-off; then the project alone as of the first date that installs it
    assert ">>> resolving as of 2016-05-02T08:00:00Z" in out
    assert ">>> resolving as of none" in out
    assert ">>> the project installed as of 2021-04-06T00:00:00Z" in out
    assert ">>> dropped requirement bad-lib" in out
    assert "dropped requirement ok-lib" not in out
    # a requirement that does not install as of the project's cut-off: as of a later one
    assert "dropped requirement new-lib" not in out
    assert ">>> requirement new-lib installed as of none" in out
    new_lib = [line for line in calls.splitlines() if line.endswith("new-lib")]
    assert "--exclude-newer 2021-04-06" in new_lib[0] and "--exclude-newer" not in new_lib[1]
    assert "--exclude-newer-package setuptools=2022-11-09T00:00:00Z" in calls
    assert "--no-build-isolation-package widget" in calls and "-b /c.txt" in calls
    assert "-e widget @ ." in calls  # named: built on the environment, numpy in it
    assert "numpy" in calls.splitlines()[0]  # the build requirement first


# python as the import check sees it: the project does not import with the libraries of 2019
FAKE_PYTHON = """#!/bin/bash
last=$(tail -n 1 "$UV_CALLS")
case "$last" in *"--exclude-newer ${BROKEN_UNTIL:-2019}"*|*"${BROKEN_ALWAYS:-@none@}"*)
  echo "Traceback (most recent call last):"; echo "AttributeError: no attribute 'name'"; exit 1;;
esac
"""


@pytest.mark.parametrize("imports_somewhere", [True, False])
def test_a_cutoff_whose_libraries_do_not_import_passes_to_the_next(
    tmp_path: Path, imports_somewhere: bool
) -> None:
    work = tmp_path / "repo"
    files = {"setup.py": "from setuptools import setup\nsetup(name='widget')\n",
             "src/widget/__init__.py": ""}  # fmt: skip
    commit = make_repo(work, files, "2019-08-20T14:20:40Z")
    install = plan_of(work, commit).recipe.install
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").write_text(FAKE_PYTHON)
    (tmp_path / "bin" / "python").chmod(0o755)
    os.environ["BROKEN_ALWAYS"] = "@none@" if imports_somewhere else "pip install"
    try:
        done, calls = _run_install(tmp_path, install, mkdir=False)
    finally:
        del os.environ["BROKEN_ALWAYS"]
    assert done.returncode == 0, done.stdout + done.stderr
    out, adds = done.stdout, calls.splitlines()
    assert ">>> widget does not import as of 2019-08-20T14:20:40Z: AttributeError" in out
    assert "--upgrade" not in adds[0] and "--upgrade" in adds[1]  # the next date's libraries
    if imports_somewhere:
        assert ">>> installed as of 2021-04-06T00:00:00Z" in out
        assert len(adds) == 3 and "pytest" in adds[2]  # then the test runner
    else:  # none imports: the first date that installed stays, as the log says
        assert ">>> it imports as of no cut-off: installed as of 2019-08-20T14:20:40Z" in out
        restore = adds[-2]  # before the test runner's
        assert "--exclude-newer 2019-08-20T14:20:40Z" in restore and "--upgrade" in restore


def test_the_import_check_names_the_projects_own_module_only(tmp_path: Path) -> None:
    setup = "from setuptools import setup\nsetup(name='Wid-Get')\n"
    flat = make_repo(
        tmp_path / "flat", {"setup.py": setup, "wid_get.py": ""}, "2020-01-01T00:00:00Z"
    )
    other = make_repo(
        tmp_path / "other", {"setup.py": setup, "lib/x.py": ""}, "2020-01-01T00:00:00Z"
    )
    assert "imports=(wid_get)" in plan_of(tmp_path / "flat", flat).recipe.install
    assert "imports=()" in plan_of(tmp_path / "other", other).recipe.install


# uv where atomicwrites deleted its old releases: as of 2019 none fits, uv says when one came
def test_the_runners_plugins_are_upgraded_with_it_as_of_its_date(tmp_path: Path) -> None:
    """A commit older than the oldest pytest that runs on the Python: its pytest plugins
    (pytest-cov 2.6 calls what pytest 6.2 no longer has) are upgraded after the runner, as of
    the runner's date; a commit of the runner's day changes nothing."""
    work = tmp_path / "repo"
    files = {"setup.py": "from setuptools import setup\nsetup(name='widget')\n",
             "pytest.ini": "[pytest]\naddopts = --cov=widget\n"}  # fmt: skip
    plan = plan_of(work, make_repo(work, files, "2019-11-11T00:00:00Z"))
    assert plan.recipe.python == "3.9" and "pytest-cov" in plan.requirements
    done, calls = _run_install(tmp_path, plan.recipe.install)
    assert done.returncode == 0, done.stdout + done.stderr
    runner, plugins = calls.splitlines()[-2:]
    assert "--exclude-newer 2021-03-12T00:00:00Z" in runner and "pytest>=6.2.0" in runner
    assert "--exclude-newer 2021-03-12T00:00:00Z" in plugins
    assert "--upgrade-package pytest-cov pytest-cov" in plugins
    recent = tmp_path / "recent"
    plan = plan_of(recent, make_repo(recent, files, "2022-06-01T00:00:00Z"))
    assert "pytest-cov" in plan.requirements and "--upgrade-package" not in plan.recipe.install


FAKE_UV_LATE = """#!/bin/bash
echo "$*" >> "$UV_CALLS"
case "$*" in *"atomicwrites="*) exit 0;; esac
case "$*" in *"--exclude-newer 20"*)
  echo "error: No solution found when resolving dependencies" >&2
  echo "hint: \\`atomicwrites\\` was filtered by \\`exclude-newer\\` to only include packages \\
uploaded before 2019-11-19T01:37:59Z. The latest version satisfying the requirement is \\
v1.4.1, published at 2022-07-08T18:31:40.459Z. Consider using \\`exclude-newer-package\\`." >&2
  exit 1;;
esac
"""


def test_a_requirement_with_no_release_before_the_cutoff_is_allowed_its_first(
    tmp_path: Path,
) -> None:
    work = tmp_path / "repo"
    setup = (
        "from setuptools import setup\n"
        "setup(name='widget', install_requires=['atomicwrites>=1.0'])\n"
    )
    commit = make_repo(work, {"setup.py": setup}, "2019-11-19T01:37:59Z")
    install = plan_of(work, commit).recipe.install
    done, calls = _run_install(tmp_path, install, fake_uv=FAKE_UV_LATE)
    assert done.returncode == 0, done.stdout + done.stderr
    out, adds = done.stdout, calls.splitlines()
    assert "published at 2022-07-08T18:31:40.459Z" in out  # uv's own words stay in the log
    assert ">>> atomicwrites has no release before the cut-off that fits: allowed up to " \
        "2022-07-09T00:00:00Z" in out  # fmt: skip
    assert ">>> installed as of 2019-11-19T01:37:59Z" in out  # the commit's day for the rest
    assert "--exclude-newer-package atomicwrites=2022-07-09T00:00:00Z" in adds[1]
    assert all("atomicwrites=" in call for call in adds[2:])  # the runner's install too


# uv failing a build without isolation that imports yaml (PyYAML) until it is installed
FAKE_UV_UNDECLARED = """#!/bin/bash
echo "$*" >> "$UV_CALLS"
case "$*" in *"2023-01-10"*" pyyaml"*) exit 1;; *" pyyaml"*) touch "$UV_CALLS.yaml"; exit 0;; esac
case "$*" in *"widget @ ."*) [ -e "$UV_CALLS.yaml" ] && exit 0
  echo "ModuleNotFoundError: No module named 'yaml'" >&2
  echo "hint: This error likely indicates that \\`widget\\` depends on \\`yaml\\`, but doesn't \\
declare it as a build dependency. If \\`widget\\` is a first-party package, ..." >&2
  exit 1;;
esac
"""


def test_a_module_the_build_imports_undeclared_is_installed_before_a_retry(
    tmp_path: Path,
) -> None:
    work = tmp_path / "repo"
    setup = "import numpy\nfrom setuptools import setup\nsetup(name='widget')\n"
    commit = make_repo(work, {"setup.py": setup}, "2023-01-10T00:00:00Z")
    install = plan_of(work, commit).recipe.install
    done, calls = _run_install(tmp_path, install, fake_uv=FAKE_UV_UNDECLARED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ">>> the build imports yaml, which it does not declare: installed first" in done.stdout
    # it does not install as of the commit's day: as of the next cut-off, with the project
    assert ">>> installed as of none" in done.stdout
    fetches = [c for c in calls.splitlines() if c.endswith(" pyyaml")]  # its distribution
    assert "--exclude-newer 2023-01-10" in fetches[0]  # as of each cut-off in turn
    assert "--exclude-newer" not in fetches[1]


def test_cutoffs_and_exemptions_follow_the_commit_and_the_python() -> None:
    old = datetime(2015, 6, 1, tzinfo=UTC)
    assert resolution_cutoffs(old, "3.11") == ["2015-06-01T00:00:00Z", "2023-04-25T00:00:00Z", ""]
    # the oldest editable-making setuptools on the Python plus three months, not the newest
    assert exempt_until(old, "3.11") == dict.fromkeys(
        ("setuptools", "wheel"), "2022-11-09T00:00:00Z"
    )
    assert exempt_until(old, "3.13") == dict.fromkeys(
        ("setuptools", "wheel"), "2024-08-19T00:00:00Z"
    )
    assert exempt_until(datetime(2022, 10, 1, tzinfo=UTC), "3.9") == {
        "setuptools": "2022-11-09T00:00:00Z",
        "wheel": "2022-11-09T00:00:00Z",
    }
    assert exempt_until(datetime(2023, 1, 1, tzinfo=UTC), "3.9") == {}  # its own day's
    assert exempt_until(datetime(2025, 6, 1, tzinfo=UTC), "3.13") == {}
    # pytest 7.2.0 plus three months on 3.11; a newer commit's own date
    assert runner_install(old, "3.11") == ("pytest>=7.2.0", "2023-01-21T00:00:00Z")
    new = datetime(2024, 6, 1, tzinfo=UTC)
    assert runner_install(new, "3.11") == ("pytest>=7.2.0", "2024-06-01T00:00:00Z")


def test_a_build_system_pinning_an_old_setuptools_builds_on_the_environments(
    tmp_path: Path,
) -> None:
    pyproject = (
        '[build-system]\nrequires = ["setuptools~=62.6", "wheel~=0.37.1"]\n'
        'build-backend = "setuptools.build_meta"\n[project]\nname = "widget"\n'
    )
    plan = plan_of(
        tmp_path, make_repo(tmp_path, {"pyproject.toml": pyproject}, "2022-06-01T00:00:00Z")
    )
    # the environment's setuptools made editable-capable for the build without isolation
    assert plan.build_first == ["wheel~=0.37.1", EDITABLE_BUILD_TOOLS[0]]
    assert "--no-build-isolation-package widget" in plan.recipe.install
    other = tmp_path / "other"
    pyproject = pyproject.replace("~=62.6", ">=61")
    plan = plan_of(other, make_repo(other, {"pyproject.toml": pyproject}, "2022-06-01T00:00:00Z"))
    assert plan.build_first == [] and "no-build-isolation" not in plan.recipe.install


def test_a_build_system_demanding_a_setuptools_newer_than_the_cap_builds_with_it(
    tmp_path: Path,
) -> None:
    pyproject = (
        '[build-system]\nrequires = ["setuptools>=77"]\n'
        'build-backend = "setuptools.build_meta"\n[project]\nname = "widget"\n'
    )
    plan = plan_of(
        tmp_path, make_repo(tmp_path, {"pyproject.toml": pyproject}, "2025-08-08T00:00:00Z")
    )
    # built in isolation, as declared, not on the environment's capped setuptools
    assert plan.build_first == [] and "no-build-isolation" not in plan.recipe.install
    # the constraints every build reads admit what the repository demands
    script = render(environment_script(plan.recipe, []))
    constraint = _constraints_of(script)
    assert constraint == "setuptools>=77"
    assert any(r.startswith("build constraints: setuptools>=77") for r in plan.reasons)
    assert SpecifierSet(constraint.removeprefix("setuptools")).contains("77.0.3")
    # a repository within the cap keeps it, and its environment's key
    other = tmp_path / "other"
    plan = plan_of(
        other,
        make_repo(
            other, {"pyproject.toml": pyproject.replace(">=77", ">=61")}, "2025-08-08T00:00:00Z"
        ),
    )
    assert _constraints_of(render(environment_script(plan.recipe, []))) == "setuptools<=75.1.0"
    assert "build_setuptools" not in plan.recipe.model_dump(exclude_defaults=True)


def _constraints_of(script: str) -> str:
    return script.split("<<'CONSTRAINTS'\n", 1)[1].split("\nCONSTRAINTS", 1)[0]


def test_tests_reading_httpbin_url_get_a_local_httpbin(tmp_path: Path) -> None:
    test = "import os\nHTTPBIN = os.environ.get('HTTPBIN_URL', 'http://httpbin.org/')\n"
    files = {"test_widget.py": test, "setup.py": "from setuptools import setup\nsetup()\n"}
    recipe = plan_of(tmp_path, make_repo(tmp_path, files, "2014-01-01T00:00:00Z")).recipe
    assert recipe.env == {"HTTPBIN_URL": "http://127.0.0.1:8765/"}
    assert [s.port for s in recipe.services] == [8765] and recipe.service_setup
    other = tmp_path / "other"
    files = {"test_widget.py": "URL = 'http://httpbin.org/'\n"}
    assert not plan_of(other, make_repo(other, files, "2014-01-01T00:00:00Z")).recipe.services


def test_nox_and_conda_files_give_pythons_and_requirements(tmp_path: Path) -> None:
    noxfile = (
        "import nox\nPYTHONS = ['3.10', '3.11']\n\n@nox.session(python=PYTHONS)\n"
        "def tests(session):\n    session.install('-e', '.')\n"
        "    session.install('pytest-mock', 'responses>=0.20')\n"
    )
    conda = "dependencies:\n  - python=3.11\n  - numpy\n  - pip:\n    - trustme\n"
    files = {"noxfile.py": noxfile, "environment.yml": conda,
             "setup.py": "from setuptools import setup\nsetup(name='widget')\n"}  # fmt: skip
    plan = plan_of(tmp_path, make_repo(tmp_path, files, "2024-01-01T00:00:00Z"))
    assert plan.recipe.python == "3.11"
    assert {"pytest-mock", "responses>=0.20", "trustme"} <= set(plan.requirements)
    assert "numpy" not in plan.requirements  # a conda name, not necessarily PyPI's
    assert {"noxfile.py", "environment.yml"} <= set(plan.sources)


def test_packaging_readers() -> None:
    assert tox_pythons("py{37,38}-django, py310,pypy3, py3.11") == ["3.7", "3.8", "3.10", "3.11"]
    assert ci_pythons("python:\n  - '2.7'\n  - '3.6'\n  - 3.10\n  - pypy3\n") == ["3.6", "3.10"]
    texts = {"a/req.txt": "-r ../b.txt\nx>=1\n", "b.txt": "-r a/req.txt\ny\n"}
    assert requirements_file("a/req.txt", texts.get) == ["y", "x>=1"]  # cycles end


@pytest.mark.parametrize("as_json", [False, True])
def test_envs_plan_prints_the_inferred_plan(tmp_path: Path, as_json: bool) -> None:
    work = tmp_path / "work"
    commit = make_repo(work, {"pyproject.toml": PYPROJECT}, "2024-03-01T10:00:00Z")
    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "acme__widget.git")],
                   check=True)  # fmt: skip
    row = {"instance_id": "acme__widget-1", "repo": "acme/widget", "version": "1.0",
           "base_commit": commit, "environment_setup_commit": commit}  # fmt: skip
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    env = {
        "SWE_GREEN_MIRROR_DIR": str(mirrors),
        "SWE_GREEN_DATA_DIR": str(tmp_path / "data"),
        "SWE_GREEN_DATASET": str(dataset),
        "SWE_GREEN_IMAGE_PREFIX": "swe-green-test-none",  # no base image: the published ones
    }
    args = ["envs", "plan", "--strategy", "infer", "acme__widget-1"] + (
        ["--json"] if as_json else []
    )
    done = swe_green(*args, env=env)
    assert done.returncode == 0, done.stderr
    if as_json:
        data = json.loads(done.stdout)
        assert data["recipe"]["python"] == "3.11" and data["commit"] == commit
        assert [s["name"] for s in data["scripts"]] == ["setup", "install"]
    else:
        assert "python:       3.11" in done.stdout and "why:" in done.stdout


# ------------------------------------------------------------------------- auto's fallback


def test_auto_asks_the_llm_only_with_a_key_and_tells_it_the_inferred_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.plan.env_plan import EnvPlan
    from orchestrator.settings import Settings
    from orchestrator.setup.agent.setup_llm import first_message
    from orchestrator.setup.agent.setup_models import SetupFacts
    from orchestrator.setup.plan import fallback_note, llm_fallback_available

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert not llm_fallback_available(Settings(setup_strategy="auto"))
    assert not llm_fallback_available(Settings(setup_strategy="infer", anthropic_api_key="k"))
    assert llm_fallback_available(Settings(setup_strategy="auto", anthropic_api_key="k"))

    commit = make_repo(tmp_path, {"pyproject.toml": PYPROJECT}, "2024-03-01T10:00:00Z")
    inferred = plan_of(tmp_path, commit)
    plan = EnvPlan(
        strategy="infer", recipe=inferred.recipe, inferred=inferred, python="3.11",
        base_image="b", env_key="k",
    )  # fmt: skip
    note = fallback_note(plan, "environment validation: FAIL_TO_PASS tests pass at the base")
    facts = SetupFacts(repo="acme/widget", starting_point=note)
    message = first_message(facts, "probe")
    assert "tried first and failed" in message
    assert "FAIL_TO_PASS tests pass at the base" in message
    assert "python:       3.11" in message  # the inferred plan itself
    assert "tried first" not in first_message(SetupFacts(repo="acme/widget"), "probe")
