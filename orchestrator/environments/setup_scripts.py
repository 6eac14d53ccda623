"""The bash scripts that build an environment (phases 1-3, from a recipe) and prepare the
base commit (phase 4, history hygiene), and the paths they share with the build."""

from __future__ import annotations

import re
import shlex

from orchestrator.environments.recipes import Recipe
from orchestrator.models import Instance
from orchestrator.safe_git import SHELL_GIT_FUNCTION

TESTBED = "/testbed"
SWE_DIR = "/opt/swe"
VENV = f"{SWE_DIR}/venv"
ACTIVATE = f"{SWE_DIR}/activate.sh"
LABEL_ENV_KEY = "swe-green.env-key"
# "<owner/name>@<version>" of the instance whose set-up built it: where a cluster run places
# that (repo, version)'s instances
LABEL_REPO_VERSION = "swe-green.repo-version"
# what an LLM-built environment found: kept on its image so that a cache hit knows it too
LABEL_TEST_CMD = "swe-green.test-cmd"
LABEL_REINSTALL = "swe-green.reinstall"
LABEL_PYTHON = "swe-green.python"  # the Python the environment's venv runs (e.g. "3.9.2")
PYTHON_MIRROR_DIR = f"{SWE_DIR}/python-mirror"  # a host mirror directory, during set-up only

# Bump when the set-up script changes in a way that changes what it builds: it is part of the
# environment cache key, so images built by an older script are not reused.
SETUP_SCRIPT_VERSION = 3
# pip of SWE-bench's environments' era: PEP 660 editable installs (pyproject-only projects,
# pip >= 21.3), and PIP_CONSTRAINT still reaches isolated build environments.
PIP_VERSION = "24.2"
# newest setuptools that isolated builds may use: later ones dropped what old setup.py files
# rely on (`setup.py develop` re-entering pip, setup_requires, ...)
SETUPTOOLS_CAP = "75.1.0"
BUILD_CONSTRAINTS = f"{SWE_DIR}/build-constraints.txt"


def build_constraints(pins: list[str]) -> str:
    """The constraints file for every pip call of the environment (isolated builds too):
    setuptools no newer than ``SETUPTOOLS_CAP``, or than the recipe's own pin when that is
    newer. (An older pin is not a cap: pylint 3.0's frozen environment pins setuptools 41.6
    while its pyproject.toml needs >= 66.1 to build.)"""
    cap = SETUPTOOLS_CAP
    for pin in pins:
        name, _, version = pin.partition("==")
        if name.strip().lower() == "setuptools" and version:
            if _version_key(version) > _version_key(cap):
                cap = version.strip()
    return f"setuptools<={cap}\n"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def recipe_setup_script(
    recipe: Recipe,
    pins: list[str],
    fetch_python: str | None = None,
    python_env: dict[str, str] | None = None,
) -> str:
    """The bash script that builds a recipe's environment in /testbed (network on).

    With ``fetch_python``, uv first tries to install that exact Python; when it cannot (no
    internet), the base image's Python is used and the log says so. The virtual environment
    is made with copies of the interpreter, not symlinks: tools that link to it again
    (tox-current-env's ``.tox/py39/bin/python``) still start inside it.
    """
    plain_venv = f'python3 -m venv --copies {VENV} || fail "creating the virtual environment"'
    if fetch_python:
        uv_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (python_env or {}).items())
        venv = (
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
    else:
        venv = plain_venv
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in recipe.env.items())
    # one shell for all pre-install lines, as SWE-bench runs them: later lines use earlier
    # lines' variables (matplotlib's QHULL_URL ...)
    # (a separate bash: `set -e` is void in a subshell on the left of `||`)
    pre = (
        f"bash -exc {shlex.quote(chr(10).join(recipe.pre_install))} || fail pre-install"
        if recipe.pre_install
        else ""
    )
    quoted_pins = " ".join(shlex.quote(p) for p in pins)
    services = (
        'step "services for the tests"\n'
        f"bash -exc {shlex.quote(chr(10).join(recipe.service_setup))} || fail 'service set-up'"
        if recipe.service_setup
        else ""
    )
    return f"""#!/bin/bash
set -uo pipefail
step() {{ echo; echo ">>>>> $*"; }}
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
run_step() {{ echo "+ $1"; bash -c "$1"; }}
cd {TESTBED}
step "python: base image $(python3 --version)"
{venv}
cat > {BUILD_CONSTRAINTS} <<'CONSTRAINTS'
{build_constraints(pins).strip()}
CONSTRAINTS
cat > {ACTIVATE} <<'ACTIVATE'
source {VENV}/bin/activate
export PIP_CONSTRAINT={BUILD_CONSTRAINTS}
{exports}
cd {TESTBED}
ACTIVATE
source {ACTIVATE}
step "build tools"
python -m pip install -q "pip=={PIP_VERSION}" setuptools wheel \\
  || fail "installing pip, setuptools and wheel"
step "pinned packages"
pins=({quoted_pins})
install_pin() {{
  if command -v uv >/dev/null \\
      && UV_HTTP_TIMEOUT=60 uv pip install -q --python {VENV}/bin/python --no-deps "$@"; then
    return 0
  fi
  python -m pip install -q --no-deps "$@"
}}
if [ ${{#pins[@]}} -gt 0 ]; then
  if install_pin "${{pins[@]}}"; then
    echo "installed ${{#pins[@]}} pins"
  else
    echo "installing the pins together failed; installing them one by one"
    for pin in "${{pins[@]}}"; do
      # a release without wheels for this Python (a stand-in for the spec's): the newest of
      # its series (numpy==1.19.2 -> numpy==1.19.*, which has them), else dropped
      install_pin "$pin" \\
        || {{ [[ "$pin" == *==*.*.* ]] && install_pin "${{pin%.*}}.*" \\
              && echo "pin $pin replaced by ${{pin%.*}}.*"; }} \\
        || {{ echo "dropped pin $pin"; echo "$pin" >> {SWE_DIR}/dropped-pins.txt; }}
    done
  fi
fi
step "pre-install"
{pre}
step "install"
run_step {shlex.quote(recipe.install)} || fail "install command"
{services}
step "done"
"""


CLEAN_GIT = f"{SWE_DIR}/clean-git"


def base_commit_script(instance: Instance, reinstall: str | None) -> str:
    """Check out the base commit, reinstall, then swap in the history-clean ``.git``.

    The clean ``.git`` (:func:`export_clean_git`, only what the base commit reaches) is put at
    ``CLEAN_GIT`` before the script runs; the environment image's own ``.git`` (all of the
    mirror's history) is removed. The index, ``info/exclude`` and submodules' ``modules/``
    are carried over: the same blobs, so the tree stays clean.
    """
    reinstall_step = (
        f'echo ">>>>> reinstall"; bash -ec {shlex.quote(reinstall)} || fail reinstall\n'
        # pre-install commands may edit tracked files; the participant must see a clean tree
        "git checkout -q -- ."
        if reinstall
        else ""
    )
    return f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
{SHELL_GIT_FUNCTION}
source {ACTIVATE} 2>/dev/null || cd {TESTBED}
cd {TESTBED}
# a base commit the mirror got after the environment image was built: from the clean history
git cat-file -e "{instance.base_commit}^{{commit}}" 2>/dev/null \\
  || git fetch -q --no-tags {CLEAN_GIT} main || fail "fetching the base commit"
git reset -q --hard && git -c advice.detachedHead=false checkout -q -f {instance.base_commit} \\
  || fail "checking out the base commit"
git clean -fdq
git checkout -q -B main
if [ -f .gitmodules ]; then
  git -c protocol.file.allow=always submodule update --init --no-fetch -q \\
    || fail "checking out the submodules at the base commit"
fi
{reinstall_step}
cd {TESTBED}
# what the environment built (egg-info, compiled files) is not the participant's change
git ls-files --others --exclude-standard >> .git/info/exclude
mkdir -p {CLEAN_GIT}/info
cp .git/info/exclude {CLEAN_GIT}/info/exclude
cp .git/index {CLEAN_GIT}/index || fail "copying the index"
if [ -d .git/modules ]; then mv .git/modules {CLEAN_GIT}/modules; fi
rm -rf .git && mv {CLEAN_GIT} .git || fail "installing the clean history"
test "$(git rev-parse HEAD)" = {instance.base_commit} || fail "clean history is not at the base"
git status --short | head -20
echo ">>>>> base commit ready: $(git rev-parse HEAD)"
"""
