"""Reinstalling after a patch that changes what the build reads (a new dependency).

SWE-bench's harness runs the recipe's install command again after applying the model's
patch. Doing it for every patch costs a reinstall per grading; doing it never fails a gold
patch that adds a dependency (``pylint-dev__pylint-4661`` adds ``appdirs`` in ``setup.cfg``).
So: only when the patch changes a build input (:func:`.recipe.touches_build_inputs`), or
for any change when the install is not editable (django 1.11 and 2.2's ``python setup.py
install`` copies the sources into site-packages, where the tests import them from:
without the reinstall the patch does not reach the tests), with the package index
reachable for the install and no other host (:mod:`.egress`). The install runs
the patch's build code, as the official harness does.

**The patch's build code never runs where the tests do** (:func:`contained_reinstall`).
It runs in a container of its own: the grading container with the patch applied, before
the hidden tests or the eval files are in it. That container is then stopped, which ends
every process of its PID namespace (a daemon that re-forks faster than a list of process
ids can follow too); what the build changed is judged file by file
(:mod:`.observe`, :mod:`.guard`); the tests run in a new container
started from its files (:data:`orchestrator.context.successor.Successor`), where no process
of the build exists. Without a reinstall nothing of this happens: no extra container.

**The build runs as root.** The install writes site-packages and the bin directory, which
are root's (the images install the environment as root), and pip must be able to replace
the package's metadata there; as another user the honest reinstall of a new dependency
would fail, or site-packages would have to be handed to that user in every image. Root in
a throwaway container is contained: it holds neither the hidden tests nor the eval files,
reaches the package index only, none of its processes outlive it, and nothing it wrote
reaches the tests but what the rules allow. The gold patch's reinstall in validation
(:func:`reinstall_after_patch`) runs in place: the gold patch is the benchmark's, not a
participant's.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from pydantic import BaseModel, Field

from orchestrator.context.successor import Successor
from orchestrator.diffs.diff import Patch, as_patch
from orchestrator.grading.reinstall.egress import NoEgress, index_only_network
from orchestrator.grading.reinstall.guard import (
    RepoChanges,
    Written,
    record_problems,
    recorded_hashes,
    reinstall_problems,
)
from orchestrator.grading.reinstall.observe import (
    ACTIVATE,
    Before,
    Stopped,
    digests,
    drop_bytecode,
    in_tree,
    observe_before,
    observe_stopped,
    outside_changed,
    repo_changes,
)
from orchestrator.plan.install import install_command
from orchestrator.recipes.recipe import (
    Recipe,
    copies_sources,
    reinstall_needed,
    touches_build_inputs,
)
from orchestrator.sandbox import ExecResult, Sandbox
from sandbox_tools.contract import REINSTALL_TMP, TESTBED

__all__ = [
    "ACTIVATE", "Reinstalled", "changes_build_inputs", "contained_reinstall", "needs_reinstall",
    "patch_paths", "reinstall_after_patch",
]  # fmt: skip


def patch_paths(patch: Patch | str) -> list[str]:
    """The files a unified diff changes (new and old names)."""
    return sorted({path for part in as_patch(patch).files for path in part.paths if path})


def changes_build_inputs(patch: Patch | str) -> bool:
    """Whether ``patch`` changes a file the build reads (packaging files, C/Cython sources,
    requirements)."""
    return touches_build_inputs(patch_paths(patch))


def needs_reinstall(recipe: Recipe, patch: Patch | str) -> bool:
    """Whether the install must run again after ``patch``: it changes a build input, or the
    install copied the sources (not editable), so any change must be installed again."""
    return reinstall_needed(recipe.install, patch_paths(patch))


_INSTALL_LOG = f"{REINSTALL_TMP}.log"
# stop what the install left running: every process that was not there before it
_PIDS_BEFORE = f"{REINSTALL_TMP}-pids-before"
_STOP_NEW = (
    f"[ -f {_PIDS_BEFORE} ] && for pid in $(ps -eo pid=); do "
    f'grep -qx "$pid" {_PIDS_BEFORE} || [ "$pid" = $$ ] || kill -9 "$pid" 2>/dev/null; '
    f"done; rm -f {_PIDS_BEFORE}"
)


def reinstall_after_patch(
    sandbox: Sandbox, recipe: Recipe, patch: Patch | str, timeout: float
) -> tuple[bool, str] | None:
    """Run the install again in ``sandbox`` if ``patch`` needs it (:func:`needs_reinstall`);
    None when not needed, else (succeeded, the output's last lines). What the install left
    running is stopped; the network is off again afterwards. Unguarded and in place: for the
    benchmark's own gold patch only."""
    if not needs_reinstall(recipe, patch):
        return None
    sandbox.exec(
        ["bash", "-c", f"ps -eo pid= | tr -d ' ' > {REINSTALL_TMP}-pids-before"], timeout=30
    )
    try:
        result, network = _install(sandbox, recipe, timeout)
    finally:
        sandbox.exec(["bash", "-c", _STOP_NEW], timeout=30)
    return result.ok, _tail(result, network)


class Reinstalled(BaseModel):
    """A reinstall: whether it succeeded, its output's last lines, and what it wrote that it
    may not (:func:`.guard.reinstall_problems`)."""

    ok: bool
    tail: str = ""
    refused: list[str] = Field(default_factory=list)
    compiled: list[str] = Field(default_factory=list)  # compiled modules it wrote


@contextlib.contextmanager
def _install_network(sandbox: Sandbox) -> Iterator[tuple[dict[str, str], str]]:
    """The install's environment and network: the package index only
    (:func:`.egress.index_only_network`), else none at all."""
    try:
        with index_only_network(sandbox) as env:
            yield env, "the package index only"
    except NoEgress as exc:
        sandbox.set_network(False)
        yield {}, f"none, {exc}"


def _install(sandbox: Sandbox, recipe: Recipe, timeout: float) -> tuple[ExecResult, str]:
    """The recipe's install command with the package index reachable; the network is off
    again afterwards. The result, and which network it had."""
    # the output goes to a file, not to the exec's pipe: a process the build leaves holding
    # its output (a daemon) cannot keep the exec, and so grading, waiting
    install = f"source {ACTIVATE} && ({install_command(recipe)}) > {_INSTALL_LOG} 2>&1 < /dev/null"
    with _install_network(sandbox) as (env, network):
        try:
            result = sandbox.exec(["bash", "-c", install], timeout=timeout, env=env)
            output = sandbox.exec(["tail", "-n", "5", _INSTALL_LOG], timeout=30).stdout
        finally:
            sandbox.set_network(False)
    return result.model_copy(update={"stdout": output + result.stdout}), network


def _tail(result: ExecResult, network: str) -> str:
    return "\n".join([f"(network: {network})", *result.output.strip().splitlines()[-5:]])


@contextlib.contextmanager
def contained_reinstall(
    sandbox: Sandbox,
    recipe: Recipe,
    patch: Patch | str,
    timeout: float,
    successor: Successor,
    *,
    repo_dir: str = TESTBED,
    runner_files: list[str] | None = None,
) -> Iterator[tuple[Sandbox, Reinstalled | None]]:
    """Where the tests may run after ``patch`` (applied in ``sandbox``), and the reinstall.

    Without a reinstall to do (:func:`needs_reinstall`): ``sandbox`` itself, and None.
    Otherwise the install runs in ``sandbox`` (no hidden tests or eval files may be in it
    yet), which is then stopped and judged; a fresh sandbox from its files (``successor``,
    removed when the context ends) is where the tests may run, unless ``refused`` lists
    what the build wrote that it may not (then the sandbox given back is not for tests).
    ``sandbox`` stays stopped: the caller's to remove."""
    if not needs_reinstall(recipe, patch):
        yield sandbox, None
        return
    before = observe_before(sandbox, repo_dir, patch_paths(patch))
    try:
        result, network = _install(sandbox, recipe, timeout)
    finally:
        sandbox.stop(0)  # every process of the build ends with the container's PID namespace
    done = Reinstalled(ok=result.ok, tail=_tail(result, network))
    stopped = observe_stopped(sandbox, before)
    copies, runners = copies_sources(recipe.install), runner_files or []
    # bytecode is removed, not judged (see drop_bytecode)
    paths = {p for p in stopped.paths if not p.endswith((".pyc", ".pyo"))}
    outside = _written(before, stopped, copies, {p for p in paths if not in_tree(p, repo_dir)})
    done.refused = reinstall_problems(outside, repo_dir, runners)
    if done.refused:  # judged from the host: no container starts from these files
        yield sandbox, done
        return
    with successor(sandbox) as fresh:
        repo = repo_changes(fresh, before)
        if repo is None:
            done.refused = [f"{repo_dir} (its files cannot be compared with the patch's)"]
        else:
            inside = {p for p in paths if in_tree(p, repo_dir)}
            inside |= {f"{repo_dir}/{rel}" for rel in repo.changed}
            later = outside_changed(fresh, before)
            stopped.texts |= later.texts
            stopped.unreadable |= later.unreadable
            later_paths = {p for p in later.paths if not p.endswith((".pyc", ".pyo"))}
            written = _written(before, stopped, copies, inside | later_paths, repo)
            done.refused = reinstall_problems(written, repo_dir, runners)
            done.refused += _not_as_recorded(fresh, stopped, paths | later_paths)
            done.compiled = compiled_modules(paths | later_paths, repo_dir)
            drop_bytecode(fresh, stopped.paths | later.paths)
        yield fresh, done


def _not_as_recorded(fresh: Sandbox, stopped: Stopped, paths: set[str]) -> list[str]:
    """The files a ``RECORD`` the reinstall wrote lists whose content is not the listed one
    (hashed in ``fresh``, where no process of the build runs)."""
    hashes = recorded_hashes(stopped.texts)
    listed = sorted(p for p in paths if p in hashes)
    return record_problems(listed, hashes, digests(fresh, listed)) if listed else []


def compiled_modules(paths: set[str], repo_dir: str) -> list[str]:
    """The compiled extension modules the reinstall wrote (``.so``/``.pyd``), the
    repository's relative to it: their code runs where no audit event fires."""
    found = [p for p in paths if re.search(r"\.(?:so|pyd)$", p)]
    return sorted(p[len(repo_dir) + 1 :] if in_tree(p, repo_dir) else p for p in found)


def _written(
    before: Before, stopped: Stopped, copies: bool, paths: set[str],
    repo: RepoChanges | None = None,
) -> Written:  # fmt: skip
    return Written(
        paths, stopped.texts, before.existed, before.repo_modules, copies,
        repo=repo, unreadable=stopped.unreadable, tools=before.tools,
    )  # fmt: skip
