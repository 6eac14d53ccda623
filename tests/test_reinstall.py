"""A patch that adds a dependency is installed again before the tests (pylint-dev__pylint-4661
adds appdirs in setup.cfg); the network is on for that install only."""

from __future__ import annotations

import pytest

from orchestrator.environments.build import prepare_instance
from orchestrator.environments.reinstall import (
    changes_build_inputs,
    guarded_reinstall,
    reinstall_after_patch,
)
from orchestrator.environments.reinstall_guard import Written, pth_problem, reinstall_problems
from orchestrator.run.pipeline import test_recipe as recipe_of

# succeeds only with the network on (the package index is the one host containers reach)
PYPI_PROBE = "python3 -m pip download -q --no-deps --timeout 5 --retries 0 six==1.16.0 -d /tmp/p"
ADD_DEPENDENCY = """\
diff --git a/pyproject.toml b/pyproject.toml
--- a/pyproject.toml
+++ b/pyproject.toml
@@ -4,3 +4,4 @@ build-backend = "setuptools.build_meta"
 [project]
 name = "calc"
 version = "0.1"
+dependencies = ["six==1.16.0"]
"""
SOURCE_ONLY = """\
diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return b + a
"""


def test_only_patches_to_build_inputs_need_a_reinstall():
    assert changes_build_inputs(ADD_DEPENDENCY)
    assert not changes_build_inputs(SOURCE_ONLY)


@pytest.mark.container
def test_a_patch_that_adds_a_dependency_gets_it_installed(
    run_ctx, synthetic_instances, make_sandbox
):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    recipe = recipe_of(prepared).model_copy(
        update={"install": "python -m pip install -e ."}  # resolves dependencies
    )
    sandbox = make_sandbox(prepared.instance_image, network=False)
    sandbox.write_file("/tmp/dep.patch", ADD_DEPENDENCY)
    assert sandbox.exec("cd /testbed && git apply /tmp/dep.patch").exit_code == 0
    has_six = "source /opt/swe/activate.sh && python -c 'import six'"
    assert sandbox.exec(has_six).exit_code != 0
    assert reinstall_after_patch(sandbox, recipe, SOURCE_ONLY, timeout=300) is None
    done = guarded_reinstall(sandbox, recipe, ADD_DEPENDENCY, 300)
    assert done is not None and done.ok, done
    assert done.refused == []  # a dependency from the index and the package's own metadata
    assert sandbox.exec(has_six).exit_code == 0
    # the network is off again, and the container still runs
    assert sandbox.exec(PYPI_PROBE, timeout=60).exit_code != 0
    assert sandbox.is_running()


# ------------------------------------------------------------- what a reinstall may write
SITE = "/opt/swe/venv/lib/python3.11/site-packages"


def _problems(changed, texts=None, existed=(), repo_modules=("calc",)):
    written = Written(changed, texts or {}, existed, repo_modules)
    return reinstall_problems(written, "/testbed", ["runtests.py"])


def test_the_package_s_own_build_output_and_metadata_are_allowed():
    changed = [
        "/testbed/calc.egg-info/PKG-INFO",
        "/testbed/build/lib/calc/__init__.py",
        "/testbed/calc/_ext.cpython-311-x86_64-linux-gnu.so",
        "/testbed/calc/version.py",
        "/testbed/.git/index",
        f"{SITE}/calc-0.1.dist-info/RECORD",
        f"{SITE}/__editable__.calc-0.1.pth",
        f"{SITE}/__editable___calc_0_1_finder.py",
        f"{SITE}/calc.egg-link",
        f"{SITE}/easy-install.pth",
        f"{SITE}/six.py",  # a new dependency, listed in its RECORD
        f"{SITE}/six-1.16.0.dist-info/RECORD",
        "/opt/swe/venv/bin/calc-cli",
        "/tmp/pip-build/x",
        "/root/.cache/pip/http/y",
    ]
    texts = {
        f"{SITE}/__editable__.calc-0.1.pth": "import __editable___calc_0_1_finder; "
        "__editable___calc_0_1_finder.install()\n",
        f"{SITE}/easy-install.pth": "/testbed\n",
        f"{SITE}/six-1.16.0.dist-info/RECORD": "six.py,sha256=x,1\nsix-1.16.0.dist-info/RECORD,,\n",
    }
    assert _problems(changed, texts) == []


def test_plants_beyond_the_package_s_own_files_are_refused():
    changed = [
        f"{SITE}/zz_hostile.pth",
        f"{SITE}/hostile_plugin.py",
        f"{SITE}/__editable__.calc-0.1.pth",
        f"{SITE}/calc/__init__.py",  # would shadow the repository's package
        f"{SITE}/_pytest/runner.py",
        f"{SITE}/numpy/core/x.py",  # an installed package's file
        f"{SITE}/evil-1.0.dist-info/entry_points.txt",
        "/opt/swe/venv/bin/pytest",
        "/opt/swe/activate.sh",
        "/usr/lib/python3.11/sitecustomize.py",
        "/root/.bashrc",
        "/testbed/conftest.py",
        "/testbed/tests/conftest.py",
        "/testbed/.git/hooks/pre-commit",
    ]
    texts = {
        f"{SITE}/__editable__.calc-0.1.pth": "import os; os.system('x')\n",
        f"{SITE}/evil-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = evil\n",
    }
    problems = _problems(changed, texts, existed=[f"{SITE}/numpy/core/x.py"])
    assert [p.split(" (", 1)[0] for p in problems] == sorted(changed)
    assert f"{SITE}/zz_hostile.pth (a .pth file of no package's own metadata)" in problems
    assert f"{SITE}/hostile_plugin.py (no installed package's RECORD lists it)" in problems


def test_pth_lines_that_run_code_are_refused_unless_setuptools_wrote_them():
    assert pth_problem("/testbed\n# comment\n") is None
    assert pth_problem("import sys; sys.__plen = len(sys.path)\n") is None
    assert pth_problem("import os; os.environ['PYTEST_ADDOPTS'] = '-p x'\n") is not None
