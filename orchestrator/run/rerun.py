"""Re-running an instance's grading by hand (``swe-green inspect``): a container in the state
the tests ran in, the scripts that run its FAIL_TO_PASS tests and the whole eval again, and a
shell with the environment active.

A kept container is made ready in place (:func:`ready_for_shell`). Without one (a predictions
run keeps none, a cleaned host, another machine) :func:`recreate` starts a container from the
instance image, which phases 1-4 take from the cache or build again, and applies the patch
the run graded (``graded.patch``, else ``patch.diff`` without its test infrastructure) and the
test patch: the working tree as graded.

In the container: ``/opt/swe/eval/eval.sh`` is the run's own eval script (the one grading ran,
recorded in the run directory; generated again when the run has none), and
``/opt/swe/eval/fail_to_pass.sh`` the same script with only the FAIL_TO_PASS tests selected
where the runner can select by name (pytest node ids and sphinx's tox, sympy's ``-k``,
django's ``module.Class.method`` labels); elsewhere it runs the instance's test files. Both
reset the test files and apply the test patch first, and reset them again at the end.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.diffs.apply import apply_patch
from orchestrator.diffs.diff import Patch
from orchestrator.environments.build import prepare_instance
from orchestrator.environments.prepared import recipe_of
from orchestrator.grading.script import TEST_PATCH_PATH, eval_script
from orchestrator.models import Instance
from orchestrator.recipes.harness_files import drop_harness_files
from orchestrator.recipes.recipe import Recipe, directives_of, reinstall_needed
from orchestrator.recipes.selection import runner_kind, selected_directives
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.archives import files_archive
from sandbox_tools.contract import ACTIVATE, EVAL_DIR
from sandbox_tools.contract import TESTBED as REPO_DIR

F2P_SCRIPT = f"{EVAL_DIR}/fail_to_pass.sh"
EVAL_SCRIPT = f"{EVAL_DIR}/eval.sh"
SHELL_RC = f"{EVAL_DIR}/inspect.rc"
SHELL = f"{EVAL_DIR}/inspect-shell"  # bash with SHELL_RC: what inspect opens
INSPECT_ROLE = "inspect"


@dataclass
class Prepared:
    """What :func:`recreate` and :func:`ready_for_shell` did, and the commands to run."""

    sandbox: Sandbox
    said: list[str] = field(default_factory=list)  # what was rebuilt, reused, applied
    fail_to_pass: str = f"bash {F2P_SCRIPT}"
    whole_eval: str = f"bash {EVAL_SCRIPT}"


def fail_to_pass_directives(recipe: Recipe, instance: Instance) -> tuple[list[str] | None, str]:
    """What the runner gets to run only the FAIL_TO_PASS tests, and a line saying so; None
    (the test files) when it cannot select them by name."""
    names = instance.FAIL_TO_PASS
    chosen = selected_directives(recipe, instance, names, django_labels=True)
    if chosen is not None:
        kind = "django labels" if recipe.log_format == "django" else runner_kind(recipe)
        return chosen, f"runs the {len(names)} FAIL_TO_PASS test(s) ({kind})"
    if names and all("::" in name for name in names) and runner_kind(recipe) == "pytest":
        return [n.split("[", 1)[0] for n in names], "runs the FAIL_TO_PASS node ids"
    files = ", ".join(directives_of(instance))
    return None, f"this runner cannot select tests by name: runs the test files ({files})"


def _shell_rc(instance: Instance, prepared: Prepared) -> str:
    """The shell's start file: the environment active, in the repository, the commands (on
    stderr: the shell's output stays its own)."""
    return "\n".join(
        [
            "[ -f /etc/bash.bashrc ] && . /etc/bash.bashrc",
            f"[ -f {ACTIVATE} ] && . {ACTIVATE}",
            f"cd {REPO_DIR}",
            f"echo {shlex.quote(f'swe-green inspect: {instance.instance_id}, as graded')} >&2",
            f"echo {shlex.quote('  FAIL_TO_PASS tests: ' + prepared.fail_to_pass)} >&2",
            f"echo {shlex.quote('  the whole eval:      ' + prepared.whole_eval)} >&2",
            "",
        ]
    )


def ready_for_shell(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, run: RunDir | None, said: list[str]
) -> Prepared:
    """Put the eval scripts, the test patch and the shell's start file into ``sandbox``."""
    recorded = run.path / "instances" / instance.instance_id / "eval.sh" if run else None
    if recorded is not None and recorded.is_file():
        whole = recorded.read_text(encoding="utf-8")
        said.append(f"the whole eval: the run's own eval script ({recorded})")
    else:
        whole = eval_script(instance, recipe)
        why = "the run recorded none" if run else "the run's directory is not known here: --run"
        said.append(f"the whole eval: the eval script generated again ({why})")
    directives, note = fail_to_pass_directives(recipe, instance)
    said.append(f"FAIL_TO_PASS: {note}")
    prepared = Prepared(sandbox, said)
    files: dict[str, tuple[bytes | str, int]] = {
        "eval/eval.sh": (whole, 0o755),
        "eval/fail_to_pass.sh": (eval_script(instance, recipe, None, directives=directives), 0o755),
        "eval/test.patch": (instance.test_patch.encode("utf-8", "surrogateescape"), 0o644),
        "eval/inspect.rc": (_shell_rc(instance, prepared), 0o644),
        "eval/inspect-shell": (f'#!/bin/bash\nexec bash --rcfile {SHELL_RC} -i "$@"\n', 0o755),
    }
    sandbox.exec(f"mkdir -p {EVAL_DIR}", timeout=60)
    sandbox.put_archive(str(Path(EVAL_DIR).parent), files_archive(files, dir_mode=0o755))
    return prepared


def graded_patch(run: RunDir, instance: Instance, recipe: Recipe) -> tuple[Patch, str]:
    """The patch the run graded, and which file it came from."""
    directory = run.path / "instances" / instance.instance_id
    graded = directory / "graded.patch"
    if graded.is_file():
        text = graded.read_text(encoding="utf-8", errors="surrogateescape")
        return Patch.parse(text), "graded.patch"
    raw = directory / "patch.diff"
    if not raw.is_file():
        return Patch(), ""
    text = raw.read_text(encoding="utf-8", errors="surrogateescape")
    return drop_harness_files(text, instance, recipe)[0], "patch.diff"


def recreate(ctx: RunContext, instance: Instance, run: RunDir) -> Prepared:
    """A new container in the state grading ran the tests in, from the cached images (built
    again where missing) and the run's patch, ready for a shell."""
    built = prepare_instance(ctx, instance)
    said = [
        "environment image: "
        + ("from the cache" if built.env_cache_hit else "built again (it was not cached)"),
        f"instance image {built.instance_image}: "
        + ("from the cache" if built.instance_cache_hit else "built again (it was not cached)"),
    ]
    recipe = recipe_of(built)
    sandbox = ctx.start_sandbox(built.snapshot, instance, INSPECT_ROLE, network=False)
    try:
        patch, source = graded_patch(run, instance, recipe)
        if patch.is_empty():
            said.append("no patch: the run recorded none (an empty patch), the tree is the base")
        else:
            applied = apply_patch(sandbox, patch, repo_dir=REPO_DIR)
            if not applied.applied:
                said.append(f"the run's {source} does not apply: {applied.error}")
            else:
                said.append(f"applied the run's {source} ({applied.strategy})")
            if reinstall_needed(recipe.install, list(patch.paths)):
                said.append(
                    "the patch changes what the build reads: grading installed the package "
                    f"again; run `{recipe.install}` in the shell to do the same"
                )
        prepared = ready_for_shell(sandbox, instance, recipe, run, said)
        result = sandbox.exec(
            f"cd {REPO_DIR} && git -c core.hooksPath=/dev/null apply {TEST_PATCH_PATH}",
            timeout=120,
        )
        said.append(
            "applied the test patch"
            if result.exit_code == 0
            else f"the test patch does not apply: {result.output.strip()[:300]}"
        )
    except BaseException:
        sandbox.remove()
        raise
    return prepared
