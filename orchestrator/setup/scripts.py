"""Phase 2's bash for a recipe: the Python, the virtual environment, and the activate script
every later step sources (the environment's contract, :mod:`sandbox_tools.contract`)."""

from __future__ import annotations

import shlex

from orchestrator.plan.pins import build_constraints
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox.scripts import Script, Step
from sandbox_tools.contract import (
    ACTIVATE,
    BUILD_CONSTRAINTS,
    PYTHON_MIRROR_DIR,
    TESTBED,
    VENV,
    VENV_SEED,
)


def _venv_step(fetch_python: str | None, python_env: dict[str, str] | None) -> str:
    """Bash making the virtual environment: with ``fetch_python``, uv first tries to install
    that exact Python; when it cannot (no internet), the base image's Python is used."""
    plain_venv = f'python3 -m venv --copies {VENV} || fail "creating the virtual environment"'
    if not fetch_python:
        return plain_venv
    uv_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (python_env or {}).items())
    return (
        f"if command -v uv >/dev/null && {uv_env} UV_HTTP_TIMEOUT=20 uv python install "
        f"{shlex.quote(fetch_python)}; then\n"
        f"  uv venv --seed --python {shlex.quote(fetch_python)} {VENV} "
        f'|| fail "creating the virtual environment with uv"\n'
        f"else\n"
        f'  echo "could not fetch Python {fetch_python}; using $(python3 --version)"\n'
        f"  {plain_venv}\n"
        f"fi\n"
        f"rm -rf {PYTHON_MIRROR_DIR}"
    )


# what `python3 -m venv` seeded besides pip (setuptools on Python < 3.12), as pins: the tools
# image has none of it (an environment's own pins replace it, in its own layer)
# the tools image's virtual environment made as `python3 -m venv` makes it: its seed put back
_READY_VENV = f"""test -x {VENV}/bin/python || fail "the virtual environment is missing"
if [ -s {VENV_SEED} ]; then
  {VENV}/bin/python -m pip install -q --no-deps $(cat {VENV_SEED}) || fail "the venv's seed"
fi"""


def environment_script(
    recipe: Recipe,
    pins: list[str],
    fetch_python: str | None = None,
    python_env: dict[str, str] | None = None,
    venv_ready: bool = False,
) -> Script:
    """Phase 2 for a recipe in /testbed (network on): the virtual environment, the build
    constraints of ``pins`` (or the setuptools the recipe's build demands), and the
    activate script; ``venv_ready``: the image has the virtual environment already (a shared
    layer).

    The virtual environment (:func:`_venv_step`) is made with copies of the interpreter, not
    symlinks: tools that link to it again (tox-current-env's ``.tox/py39/bin/python``) still
    start inside it.
    """
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in recipe.env.items())
    venv = _READY_VENV if venv_ready else _venv_step(fetch_python, python_env)
    activate = f"""cat > {BUILD_CONSTRAINTS} <<'CONSTRAINTS'
{build_constraints(pins, recipe.build_setuptools).strip()}
CONSTRAINTS
cat > {ACTIVATE} <<'ACTIVATE'
source {VENV}/bin/activate
export PIP_CONSTRAINT={BUILD_CONSTRAINTS}
{exports}
cd {TESTBED}
ACTIVATE
source {ACTIVATE} || fail "activating the environment\""""
    return Script(
        name="setup",
        activate=False,
        steps=[
            Step(title="python: base image $(python3 --version)", bash=venv),
            Step(title="the activate script", bash=activate),
        ],
    )
