"""Phase 3's install as data: a :class:`~orchestrator.sandbox.scripts.Script` of titled bash
steps (:mod:`orchestrator.sandbox.scripts` renders and runs it).

A recipe's environment is two scripts: phase 2's (the Python and the virtual environment,
:func:`orchestrator.setup.scripts.environment_script`) and phase 3's (:func:`install_script`:
build tools, pinned packages, the recipe's pre-install and install commands, its services).
"""

from __future__ import annotations

import shlex

from orchestrator.plan.pins import pins_for_python
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox.scripts import Script, Step
from sandbox_tools.contract import DROPPED_PINS, VENV

# Bump when a set-up script changes in a way that changes what it builds: it is part of the
# environment cache key, so images built by an older script are not reused.
SETUP_SCRIPT_VERSION = 5
# pip of SWE-bench's environments' era: PEP 660 editable installs (pyproject-only projects,
# pip >= 21.3), and PIP_CONSTRAINT still reaches isolated build environments.
PIP_VERSION = "24.2"


def pins_step(pins: list[str]) -> Step:
    """Install the pins: together, else one by one, where a release without wheels for this
    Python (a stand-in for the spec's) becomes the newest of its series (numpy==1.19.2 ->
    numpy==1.19.*, which has them), else the oldest later release with a wheel for this
    Python (pillow==7.2.0 -> 8.0.0 on 3.9: no 7.x has one, and its sources need image
    libraries the image lacks), else is dropped (and listed in ``DROPPED_PINS``)."""
    return Step(
        title="pinned packages",
        bash=f"""{pins_for_python(pins)}
install_pin() {{
  if command -v uv >/dev/null \\
      && UV_HTTP_TIMEOUT=60 uv pip install -q --python {VENV}/bin/python --no-deps "$@"; then
    return 0
  fi
  python -m pip install -q --no-deps "$@"
}}
install_later_wheel() {{  # the oldest release from the pin's version on with a wheel
  command -v uv >/dev/null && UV_HTTP_TIMEOUT=60 uv pip install --python {VENV}/bin/python \\
    --no-deps --only-binary :all: --resolution lowest "${{1/==/>=}}"
}}
if [ ${{#pins[@]}} -gt 0 ]; then
  if install_pin "${{pins[@]}}"; then
    echo "installed ${{#pins[@]}} pins"
  else
    echo "installing the pins together failed; installing them one by one"
    for pin in "${{pins[@]}}"; do
      install_pin "$pin" \\
        || {{ [[ "$pin" == *==*.*.* ]] && install_pin "${{pin%.*}}.*" \\
              && echo "pin $pin replaced by ${{pin%.*}}.*"; }} \\
        || {{ [[ "$pin" == *==* ]] && install_later_wheel "$pin" \\
              && echo "pin $pin replaced by the oldest later release with a wheel (above)"; }} \\
        || {{ echo "dropped pin $pin"; echo "$pin" >> {DROPPED_PINS}; }}
    done
  fi
fi""",
    )


def shell_step(title: str, lines: list[str], failure: str) -> Step:
    """One bash for all of a recipe's lines, as SWE-bench runs them: later lines use earlier
    lines' variables (matplotlib's QHULL_URL ...). A separate bash: ``set -e`` is void in a
    subshell on the left of ``||``."""
    return Step(
        title=title,
        bash=f"bash -exc {shlex.quote(chr(10).join(lines))} || fail {shlex.quote(failure)}",
    )


def install_command(recipe: Recipe) -> str:
    """The command that installs the project in its environment: phase 3 runs it once, and
    grading runs it again after a patch that changes a build input
    (:mod:`orchestrator.grading.reinstall`)."""
    return recipe.install


def install_script(recipe: Recipe, pins: list[str]) -> Script:
    """Phase 3 for a recipe, in its environment: build tools, pins, the recipe's
    pre-install and install commands, and the services its tests need."""
    steps = [
        Step(
            title="build tools",
            bash=f'python -m pip install -q "pip=={PIP_VERSION}" setuptools wheel \\\n'
            '  || fail "installing pip, setuptools and wheel"',
        ),
        pins_step(pins),
        shell_step("pre-install", recipe.pre_install, "pre-install")
        if recipe.pre_install
        else Step(title="pre-install", bash=""),
        Step(
            title="install",
            bash=f'run_step {shlex.quote(install_command(recipe))} || fail "install command"',
        ),
    ]
    if recipe.service_setup:
        steps.append(shell_step("services for the tests", recipe.service_setup, "service set-up"))
    return Script(name="install", steps=steps)


def own_pins_script(pins: list[str]) -> Script:
    """An instance's own pins over its recipe's environment (a layer on that environment's
    image), installed as the recipe's pins are."""
    step = pins_step(pins)
    return Script(
        name="own-pins", steps=[step.model_copy(update={"title": "the instance's own pins"})]
    )
