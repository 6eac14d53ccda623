"""Phase 4's bash: the base commit checked out, reinstalled if it needs it, and ``.git`` cut
to what the base reaches; and the end of phases 1-3, where the environment's ``.git``
becomes the history its instances share."""

from __future__ import annotations

import shlex

from orchestrator.models import Instance
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from sandbox_tools.contract import ACTIVATE, CLEAN_GIT, SHARED_PACKS, TESTBED, VENV

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
    (put at ``CLEAN_GIT``: :func:`.clean_history.export_clean_git` of their common ancestor),
    so that each instance image adds only what its base reaches beyond it. The working tree
    and the index stay those of the set-up commit; phase 4 moves them to the base.
    ``onto_shared``: the image below holds the repository's history (``SHARED_PACKS``),
    ``CLEAN_GIT`` only what lies beyond it."""
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
    reaches. ``CLEAN_GIT`` holds :func:`.clean_history.export_clean_git` of the base before
    the script runs; ``history`` says what it is and what the environment's ``.git`` holds:

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
