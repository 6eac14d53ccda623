"""The bash scripts that build an environment (phases 1-3, from a recipe) and prepare the
base commit (phase 4, history hygiene), and the paths they share with the build."""

from __future__ import annotations

import shlex

from orchestrator.environments.checkout.clean_history import CLEAN_GIT
from orchestrator.environments.setup.pins import build_constraints, pins_for_python
from orchestrator.models import Instance
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from orchestrator.spec.recipes import Recipe

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
# the commit whose history the environment's /testbed/.git holds (shared by its instances)
LABEL_SHARED_HISTORY = "swe-green.shared-history"
PYTHON_MIRROR_DIR = f"{SWE_DIR}/python-mirror"  # a host mirror directory, during set-up only

# Bump when the set-up script changes in a way that changes what it builds: it is part of the
# environment cache key, so images built by an older script are not reused.
SETUP_SCRIPT_VERSION = 5
# pip of SWE-bench's environments' era: PEP 660 editable installs (pyproject-only projects,
# pip >= 21.3), and PIP_CONSTRAINT still reaches isolated build environments.
PIP_VERSION = "24.2"
BUILD_CONSTRAINTS = f"{SWE_DIR}/build-constraints.txt"


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
VENV_SEED = f"{SWE_DIR}/venv-seed.txt"
# the tools image's virtual environment made as `python3 -m venv` makes it: its seed put back
_READY_VENV = f"""test -x {VENV}/bin/python || fail "the virtual environment is missing"
if [ -s {VENV_SEED} ]; then
  {VENV}/bin/python -m pip install -q --no-deps $(cat {VENV_SEED}) || fail "the venv's seed"
fi"""


def _pins_step(pins: list[str]) -> str:
    """Bash installing the pins: together, else one by one, where a release without wheels
    for this Python (a stand-in for the spec's) becomes the newest of its series
    (numpy==1.19.2 -> numpy==1.19.*, which has them), else the oldest later release with a
    wheel for this Python (pillow==7.2.0 -> 8.0.0 on 3.9: no 7.x has one, and its sources
    need image libraries the image lacks), else is dropped."""
    return f"""{pins_for_python(pins)}
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
        || {{ echo "dropped pin $pin"; echo "$pin" >> {SWE_DIR}/dropped-pins.txt; }}
    done
  fi
fi"""


def _shell_step(lines: list[str], failure: str) -> str:
    """One bash for all of a recipe's lines, as SWE-bench runs them: later lines use earlier
    lines' variables (matplotlib's QHULL_URL ...). A separate bash: ``set -e`` is void in a
    subshell on the left of ``||``."""
    return f"bash -exc {shlex.quote(chr(10).join(lines))} || fail {shlex.quote(failure)}"


def recipe_setup_script(
    recipe: Recipe,
    pins: list[str],
    fetch_python: str | None = None,
    python_env: dict[str, str] | None = None,
    venv_ready: bool = False,
) -> str:
    """The bash script that builds a recipe's environment in /testbed (network on);
    ``venv_ready``: the image has the virtual environment already (a shared layer).

    The virtual environment (:func:`_venv_step`) is made with copies of the interpreter, not
    symlinks: tools that link to it again (tox-current-env's ``.tox/py39/bin/python``) still
    start inside it.
    """
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in recipe.env.items())
    pre = _shell_step(recipe.pre_install, "pre-install") if recipe.pre_install else ""
    services = (
        f'step "services for the tests"\n{_shell_step(recipe.service_setup, "service set-up")}'
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
{_READY_VENV if venv_ready else _venv_step(fetch_python, python_env)}
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
{_pins_step(pins)}
step "pre-install"
{pre}
step "install"
run_step {shlex.quote(recipe.install)} || fail "install command"
{services}
step "done"
"""


def own_pins_script(pins: list[str]) -> str:
    """The bash script that adds an instance's own pins to its recipe's environment (a
    layer on that environment's image), installed as the set-up script installs pins."""
    return f"""#!/bin/bash
set -uo pipefail
step() {{ echo; echo ">>>>> $*"; }}
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
source {ACTIVATE} || fail "activating the environment"
step "the instance's own pins"
{_pins_step(pins)}
step "done"
"""


# pip >= 21.3 builds `pip install .` in the source tree: the untracked (usually ignored)
# `build/` it leaves is debris the official environments do not have, and a patch adding
# `build/lib/...` would not apply over it. Kept when it is tracked, or when the install
# runs from it (an editable finder or .pth file naming /testbed/build).
REMOVE_BUILD_DEBRIS = f"""if [ -d build ] && [ -z "$(git ls-files -- build | head -1)" ] \\
    && ! grep -rqs "{TESTBED}/build" {VENV}/lib/python*/site-packages/*.pth \\
      {VENV}/lib/python*/site-packages/__editable__*; then
  rm -rf build && echo "removed the install's build directory (build/)"
fi"""


# what a swap of /testbed/.git carries over: the index (the checkout's blobs), info/exclude
# and the submodules' repositories (nothing else of the old .git: no remote, ref, reflog or
# object)
_CARRY_GIT = f"""mkdir -p {CLEAN_GIT}/info
cp .git/info/exclude {CLEAN_GIT}/info/exclude 2>/dev/null || true
cp .git/index {CLEAN_GIT}/index || fail "copying the index"
if [ -d .git/modules ]; then mv .git/modules {CLEAN_GIT}/modules; fi"""
_SWAP_GIT = f'rm -rf .git && mv {CLEAN_GIT} .git || fail "installing the clean history"'
# the submodules' config too, while phase 4 still has to check them out
_CARRY_SUBMODULES = f"""{_CARRY_GIT}
submodules=$(git config --get-regexp '^submodule\\.' || true)
{_SWAP_GIT}
if [ -n "$submodules" ]; then
  printf '%s\\n' "$submodules" | while read -r key value; do git config "$key" "$value"; done
fi"""
# ... and not after it, as a swap at the end leaves it
_DROP_SUBMODULE_CONFIG = """git config --name-only --get-regexp '^submodule\\.' 2>/dev/null \\
  | sed 's/\\.[^.]*$//' | sort -u | while read -r section; do
  git config --remove-section "$section"
done"""


SHARED_PACKS = f"{SWE_DIR}/shared-packs.txt"
# the swap when the image below holds the repository's history in .git/objects/pack (its
# packs listed in SHARED_PACKS): everything else of the set-up's .git goes (it is of this
# layer: nothing hidden), the clean history beyond it moves in, an empty pack is dropped
_SWAP_ONTO_SHARED = f"""for idx in {CLEAN_GIT}/objects/pack/pack-*.idx; do
  [ -e "$idx" ] && [ -z "$(git show-index < "$idx" | head -1)" ] && rm -f "${{idx%.idx}}".*
done
find .git -mindepth 1 -maxdepth 1 ! -name objects -exec rm -rf {{}} +
find .git/objects -mindepth 1 -maxdepth 1 ! -name pack -exec rm -rf {{}} +
for f in .git/objects/pack/*; do
  grep -qxF "${{f##*/}}" {SHARED_PACKS} || rm -rf "$f"
done
mv {CLEAN_GIT}/objects/pack/* .git/objects/pack/ 2>/dev/null
mkdir -p .git/objects/info && rm -rf {CLEAN_GIT}/objects
(shopt -s dotglob && mv {CLEAN_GIT}/* .git/) && rmdir {CLEAN_GIT} \\
  || fail "installing the clean history"
"""


def share_history_script(onto_shared: bool = False) -> str:
    """End of phases 1-3: the environment's ``.git`` becomes the history its instances share
    (put at ``CLEAN_GIT``: :func:`export_clean_git` of their common ancestor), so that each
    instance image adds only what its base reaches beyond it. The working tree and the index
    stay those of the set-up commit; phase 4 moves them to the base. ``onto_shared``: the
    image below holds the repository's history (``SHARED_PACKS``), ``CLEAN_GIT`` only what
    lies beyond it."""
    carry = (
        _CARRY_SUBMODULES.replace(_SWAP_GIT, _SWAP_ONTO_SHARED)
        if onto_shared
        else _CARRY_SUBMODULES
    )
    return f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
{SHELL_GIT_FUNCTION}
cd {TESTBED}
{carry}
echo ">>>>> shared history: $(git rev-parse HEAD)"
"""


def _history_steps(base: str, history: str) -> tuple[str, str, str]:
    """Bash before, for and after the checkout of ``base`` (see :func:`base_commit_script`)."""
    if history == "swap":
        checkout = (
            # a base commit the mirror got after the environment image was built: from the
            # clean history
            f'git cat-file -e "{base}^{{commit}}" 2>/dev/null \\\n'
            f'  || git fetch -q --no-tags {CLEAN_GIT} main || fail "fetching the base commit"\n'
            "git reset -q --hard && git -c advice.detachedHead=false "
            f'checkout -q -f {base} \\\n  || fail "checking out the base commit"\n'
            "git clean -fdq\n"
            "git checkout -q -B main"
        )
        return "", checkout, f"{_CARRY_GIT}\n{_SWAP_GIT}"
    before = (
        _CARRY_SUBMODULES
        if history == "replace"
        else f"mv {CLEAN_GIT}/objects/pack/pack-* .git/objects/pack/ \\\n"
        f"  && cp {CLEAN_GIT}/packed-refs .git/packed-refs && rm -rf {CLEAN_GIT} \\\n"
        '  || fail "adding the history of the base commit"'
    )
    checkout = (
        f'git reset -q --hard {base} || fail "checking out the base commit"\n'
        "rm -f .git/ORIG_HEAD\ngit clean -fdq"
    )
    return before, checkout, _DROP_SUBMODULE_CONFIG


def base_commit_script(instance: Instance, reinstall: str | None, history: str = "swap") -> str:
    """Check out the base commit, reinstall, and leave ``.git`` with only what the base
    reaches. ``CLEAN_GIT`` holds :func:`export_clean_git` of the base before the script runs;
    ``history`` says what it is and what the environment's ``.git`` holds:

    - ``swap``: the environment's ``.git`` is a whole clone of the mirror: the base is
      checked out from it, then it is replaced by ``CLEAN_GIT`` (all the base reaches);
    - ``replace``: the environment's ``.git`` is a shared history the base does not descend
      from: ``CLEAN_GIT`` (all the base reaches) replaces it first;
    - ``add``: the environment's ``.git`` is a shared history the base descends from:
      ``CLEAN_GIT`` holds only the objects beyond it, added as one more pack, with the
      base's refs.

    The index, ``info/exclude`` and submodules' ``modules/`` are carried over: the same
    blobs, so the tree stays clean.
    """
    reinstall_step = (
        f'echo ">>>>> reinstall"; bash -ec {shlex.quote(reinstall)} || fail reinstall\n'
        # pre-install commands may edit tracked files; the participant must see a clean tree
        "git checkout -q -- ."
        if reinstall
        else ""
    )
    base = instance.base_commit
    before, checkout, after = _history_steps(base, history)
    return f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
{SHELL_GIT_FUNCTION}
source {ACTIVATE} 2>/dev/null || cd {TESTBED}
cd {TESTBED}
{before}
# the index's file times are those of the set-up container: refreshed first, so that the
# checkout rewrites only the files that differ (not every file, into the instance's layer)
git update-index -q --refresh >/dev/null 2>&1 || true
{checkout}
if [ -f .gitmodules ]; then
  git -c protocol.file.allow=always submodule update --init --no-fetch -q \\
    || fail "checking out the submodules at the base commit"
fi
{reinstall_step}
cd {TESTBED}
{REMOVE_BUILD_DEBRIS}
# what the environment built (egg-info, compiled files) is not the participant's change
git ls-files --others --exclude-standard >> .git/info/exclude
{after}
test "$(git rev-parse HEAD)" = {base} || fail "clean history is not at the base"
test "$(git symbolic-ref HEAD)" = refs/heads/main || fail "HEAD is not on main"
git status --short | head -20
echo ">>>>> base commit ready: $(git rev-parse HEAD)"
"""
