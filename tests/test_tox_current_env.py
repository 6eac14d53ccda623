"""tox-current-env links .tox/py39/bin/python to the venv's python; Python looks for
pyvenv.cfg beside the link, not its target, so the link starts outside the venv ("No module
named pytest", sphinx 5.x-7.x). The sphinx recipes' last pre-install line fixes that."""

from __future__ import annotations

import pytest

from orchestrator.recipes.recipe import load_recipes

pytestmark = pytest.mark.container

PREFIX = "python -c 'import sys; print(sys.prefix)'"


def test_the_sphinx_recipes_make_a_linked_python_start_inside_the_venv(make_sandbox):
    fix = load_recipes()[("sphinx-doc/sphinx", "7.2")].pre_install[-1]
    sandbox = make_sandbox()
    setup = sandbox.exec(
        "python3 -m venv --copies /opt/swe/venv && mkdir -p /testbed/.tox/py39/bin "
        "&& ln -s /opt/swe/venv/bin/python /testbed/.tox/py39/bin/python",
        timeout=120,
    )
    assert setup.ok, setup.output
    linked = "/testbed/.tox/py39/bin/" + PREFIX
    assert sandbox.exec(linked).stdout.strip() == "/usr"  # the root cause
    assert sandbox.exec(f"cd /testbed && {fix}").ok
    assert sandbox.exec(linked).stdout.strip() == "/testbed/.tox/py39"
    site = sandbox.exec("/testbed/.tox/py39/bin/python -c 'import sys; print(sys.path[-1])'")
    assert site.stdout.strip().startswith("/testbed/.tox/py39/lib/python3")  # the venv's lib
