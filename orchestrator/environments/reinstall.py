"""Reinstalling after a patch that changes what the build reads (a new dependency).

SWE-bench's harness runs the recipe's install command again after applying the model's
patch. Doing it for every patch costs a reinstall per grading; doing it never fails a gold
patch that adds a dependency (``pylint-dev__pylint-4661`` adds ``appdirs`` in ``setup.cfg``).
So: only when the patch changes a build input (:func:`recipes.touches_build_inputs`), with the
network on for the install only, before the test patch is in the container. The install
runs the patch's build code, as the official harness does; leftover processes of it are
stopped before the tests.
"""

from __future__ import annotations

from orchestrator.environments.recipes import Recipe, touches_build_inputs
from orchestrator.patches.diff import split_patch
from orchestrator.sandbox import Sandbox

ACTIVATE = "/opt/swe/activate.sh"


def patch_paths(patch: str) -> list[str]:
    """The files a unified diff changes (new and old names)."""
    return sorted({path for part in split_patch(patch)[1] for path in part.paths if path})


def changes_build_inputs(patch: str) -> bool:
    """Whether ``patch`` changes a file the build reads (packaging files, C/Cython sources,
    requirements)."""
    return touches_build_inputs(patch_paths(patch))


# stop what the install left running: every process that was not there before it
_STOP_NEW = (
    "[ -f /tmp/.swe-pids-before ] && for pid in $(ps -eo pid=); do "
    'grep -qx "$pid" /tmp/.swe-pids-before || [ "$pid" = $$ ] || kill -9 "$pid" 2>/dev/null; '
    "done; rm -f /tmp/.swe-pids-before"
)


def reinstall_after_patch(
    sandbox: Sandbox, recipe: Recipe, patch: str, timeout: float
) -> tuple[bool, str] | None:
    """Run the install again if ``patch`` changes a build input; None when not needed, else
    (succeeded, the output's last lines). The network is off again afterwards."""
    if not changes_build_inputs(patch):
        return None
    # the network first: under the restricted Docker policy switching it moves the files into
    # a new container, whose processes are the ones to keep
    sandbox.set_network(True)
    try:
        sandbox.exec(["bash", "-c", "ps -eo pid= | tr -d ' ' > /tmp/.swe-pids-before"], timeout=30)
        result = sandbox.exec(
            ["bash", "-c", f"source {ACTIVATE} && {recipe.install}"], timeout=timeout
        )
    finally:
        sandbox.exec(["bash", "-c", _STOP_NEW], timeout=30)
        sandbox.set_network(False)
    tail = "\n".join(result.output.strip().splitlines()[-5:])
    return result.ok, tail
