"""A patch that adds a dependency is installed again before the tests (pylint-dev__pylint-4661
adds appdirs in setup.cfg); the network is on for that install only."""

from __future__ import annotations

import pytest

from orchestrator.environments.build import prepare_instance
from orchestrator.environments.reinstall import changes_build_inputs, reinstall_after_patch
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
    ok, tail = reinstall_after_patch(sandbox, recipe, ADD_DEPENDENCY, timeout=300)
    assert ok, tail
    assert sandbox.exec(has_six).exit_code == 0
    # the network is off again, and the container still runs
    assert sandbox.exec(PYPI_PROBE, timeout=60).exit_code != 0
    assert sandbox.is_running()
