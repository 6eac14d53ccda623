"""``swe-green inspect``: a shell in the state an instance was graded in, with the commands
that re-run its FAIL_TO_PASS tests and its whole eval.

A kept container (the participant's, stopped) is started again for the shell and stopped
after it. Where none was kept (a predictions run, a cleaned host, another machine), or with
``--recreate``, a new container is made from the cached images and the run's patch
(:mod:`orchestrator.run.rerun`), and removed after the shell unless ``--keep``.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import err_console

RunOption = Annotated[
    str | None,
    typer.Option(help="The run: its id, or its directory (needed to recreate the state)."),
]


def inspect_cmd(
    ref: Annotated[str, typer.Argument(help="Instance id, container name or container id.")],
    run: RunOption = None,
    shell: Annotated[str, typer.Option(help="Shell to open.")] = "bash",
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Also open a running container of a run in progress (another user's: with "
            "its run named by --run, after a confirmation).",
        ),
    ] = False,
    recreate: Annotated[
        bool,
        typer.Option(
            "--recreate",
            help="Make a new container from the cached images and the run's patch, even when "
            "one was kept.",
        ),
    ] = False,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep a recreated container after the shell.")
    ] = False,
) -> None:
    """Open a shell where an instance was graded: the environment active, in /testbed.

    It prints the command that re-runs the instance's FAIL_TO_PASS tests and the one that
    re-runs its whole eval. Of an instance's containers the newest stopped, kept participant
    container is chosen; when none was kept (or with --recreate) the grading state is made
    again from the cached images and the run's patch (--run names the run). While the shell
    is open, `gc` leaves the container alone.
    """
    from orchestrator.housekeeping.inventory import NotYours, find_container
    from orchestrator.housekeeping.run_index import own_run_dirs
    from orchestrator.settings import load_settings

    current = load_settings()
    own = own_run_dirs(current.storage.data_dir, current.storage.runs_dir)
    run_id, run_dir = _run_of(run, current.storage.runs_dir, own)
    found = None
    if not recreate:
        try:
            found = find_container(_backend(current), ref, run_id=run_id, own_runs=set(own))
            run_dir = run_dir or own.get(found[0].run_id)
        except NotYours:
            raise
        except UserError as exc:
            if run_dir is None or not (run_dir / "instances" / ref).is_dir():
                raise _no_container(exc, ref, run, run_dir) from None
            err_console.print(f"No container of {ref} was kept: recreating its grading state.")
    if found is not None:
        named = run_id if run is not None else None
        code = _open_kept(current, found, run_dir, shell, force, own=set(own), named_run=named)
    else:
        if run_dir is None:
            raise (
                _not_a_run(run)
                if run is not None
                else UserError(
                    "--recreate needs the run whose patch to apply.",
                    "pass --run RUN_DIR (or run id).",
                )
            )
        code = _open_recreated(current, ref, run_dir, shell, keep)
    raise typer.Exit(code)


def _not_a_run(run: str) -> UserError:
    return UserError(
        f"--run {run} is not a run directory (it holds no config.json) nor the id of one of "
        "your runs.",
        "pass the run's directory (e.g. runs/RUN_ID) or its id, as `swe-green sandbox ls` "
        "lists it.",
    )


def _no_container(exc: UserError, ref: str, run: str | None, run_dir: Path | None) -> UserError:
    """Why no container of ``ref`` opens, and the one fix that applies."""
    if run is not None and run_dir is None:
        return _not_a_run(run)
    problem = exc.problem.rstrip(".")
    if exc.fix:
        problem += f" ({exc.fix.rstrip('.')})"
    if run_dir is not None:
        return UserError(
            f"{problem}; run {run_dir} has no instance {ref}.",
            "check the instance id: `ls RUN/instances` lists the run's.",
        )
    return UserError(
        problem + ".",
        "name the run with --run RUN_DIR: inspect then recreates the grading state from the "
        "cached images and the run's patch.",
    )


def _backend(settings):  # noqa: ANN001, ANN202 - Settings, SandboxBackend
    from orchestrator.sandbox.factory import backend_from

    return backend_from(settings)


def _run_of(
    run: str | None, runs_dir: Path, own: dict[str, Path]
) -> tuple[str | None, Path | None]:
    """(run id, run directory) of ``--run``: a run directory (or one under ``runs_dir``), or
    the id of one of the caller's runs (``own``: wherever its directory is)."""
    import json

    if run is None:
        return None, None
    for candidate in (Path(run), runs_dir / run):
        config = candidate / "config.json"
        if config.is_file():
            try:
                run_id = json.loads(config.read_text(encoding="utf-8")).get("run_id") or run
            except (OSError, ValueError):
                run_id = run
            return str(run_id), candidate
    return run, own.get(run)


def _instance(settings, instance_id: str):  # noqa: ANN001, ANN202 - Settings, Instance
    from orchestrator.dataset.instances import load_instances

    for instance in load_instances(settings.dataset.dataset, settings.dataset.dataset_split):
        if instance.instance_id == instance_id:
            return instance
    raise UserError(
        f"{instance_id} is not in the dataset {settings.dataset.dataset}.",
        "pass the run with --run so that its dataset is used, or set SWE_GREEN_DATASET.",
    )


def _run_settings(current, run_dir: Path):  # noqa: ANN001, ANN202 - Settings
    """The settings the run was started with where they decide the environment."""
    import json

    from orchestrator.frontends.cli.run_plan import RESUME_PINNED
    from orchestrator.settings import load_settings

    try:
        saved = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return current
    recorded = saved.get("settings", {})
    pinned = {name: recorded[name] for name in RESUME_PINNED if name in recorded}
    return load_settings(**{**pinned, **saved.get("settings_overrides", {})})


def _open_shell(backend, container: str, shell: str, ready: bool) -> int:  # noqa: ANN001
    """The shell in ``container`` at the repository; bash with the environment active and
    the re-run commands when the container was made ready for it."""
    from orchestrator.run.rerun import SHELL
    from sandbox_tools.contract import TESTBED

    return int(
        backend.open_shell(container, SHELL if ready and shell == "bash" else shell, TESTBED)
    )


def _say(prepared) -> None:  # noqa: ANN001 - rerun.Prepared
    for line in prepared.said:
        err_console.print(f"  {line}", highlight=False)
    err_console.print(f"Re-run the FAIL_TO_PASS tests: {prepared.fail_to_pass}", highlight=False)
    err_console.print(f"Re-run the whole eval:        {prepared.whole_eval}", highlight=False)


def _check_live(backend, data_dir: Path, info, force: bool, own: set[str], named_run) -> None:  # noqa: ANN001
    """A running container of a run in progress opens only with ``--force``; another user's
    only with its run named by ``--run`` too, and after the caller confirms at a terminal
    that they open a live container of someone else's run."""
    from orchestrator.housekeeping.engine_leases import engine_leases, live_everywhere

    if info.run_id not in live_everywhere(backend, data_dir).runs:
        return
    if info.run_id in own:
        if not force:
            raise UserError(
                f"{info.name} is a running container of your run {info.run_id}, which is in "
                "progress.",
                "wait for the run to end, or pass --force to open it anyway.",
            )
        return
    if not force or named_run != info.run_id:
        raise UserError(
            f"{info.name} is a running container of run {info.run_id}, another user's run in "
            "progress.",
            f"to open it anyway, name that run and force it: --run {info.run_id} --force "
            "(you will be asked to confirm).",
        )
    holders = sorted(
        {f"process {lease.pid} on {lease.host}" for lease in engine_leases(backend)
         if lease.live and lease.run_id == info.run_id}
    )  # fmt: skip
    whose = f"held by {', '.join(holders)}" if holders else "not one of yours"
    question = (
        f"{info.name} belongs to run {info.run_id}, another user's ({whose}), and the run is "
        "live: its participant may be working in it now. Open a root shell in it?"
    )
    if not sys.stdin.isatty():
        raise UserError(
            f"{question[:-1]} needs a confirmation, and no terminal is attached.",
            "run inspect at a terminal to confirm.",
        )
    if not typer.confirm(question, default=False, err=True):
        raise typer.Exit(1)


def _open_kept(  # noqa: ANN001, PLR0913
    current, found, run_dir: Path | None, shell: str, force: bool, *, own: set[str], named_run
) -> int:
    from orchestrator.context.run_dir import RunDir
    from orchestrator.housekeeping.engine_leases import hold_leases
    from orchestrator.run.rerun import ready_for_shell
    from orchestrator.setup.plan import find_recipe

    info, how = found
    data_dir = current.storage.data_dir
    backend = _backend(current)
    running = info.status in ("running", "paused", "restarting")
    if running:
        _check_live(backend, data_dir, info, force, own, named_run)
    err_console.print(f"Found {info.name} ({info.status}, run {info.run_id}) by {how}.")
    holder = f"inspect-{os.getpid()}"
    with hold_leases(backend, data_dir, holder, containers=[info.name], holder=holder):
        if not running:
            backend.start_container(info.id)
        try:
            prepared = None
            if info.instance_id:
                run_settings = _run_settings(current, run_dir) if run_dir else current
                try:
                    instance = _instance(run_settings, info.instance_id)
                    recipe = find_recipe(run_settings, instance)
                    if recipe is not None:
                        run_of = RunDir(run_dir) if run_dir else None
                        sandbox = backend.attach(info.id)
                        prepared = ready_for_shell(sandbox, instance, recipe, run_of, [])
                except UserError as exc:
                    err_console.print(f"No re-run commands: {exc}", highlight=False)
            if prepared is not None:
                _say(prepared)
            code = _open_shell(backend, info.id, shell, prepared is not None)
        finally:
            if not running:
                backend.stop_container(info.id, timeout=2)
                err_console.print(f"Stopped {info.name} again.")
    return code


def _open_recreated(current, instance_id: str, run_dir: Path, shell: str, keep: bool) -> int:  # noqa: ANN001
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.housekeeping.engine_leases import hold_leases
    from orchestrator.run.rerun import recreate

    run_settings = _run_settings(current, run_dir)
    instance = _instance(run_settings, instance_id)
    backend = _backend(run_settings)
    data_dir = run_settings.storage.data_dir
    inspect_id = f"inspect-{uuid.uuid4().hex[:8]}"
    scratch = RunDir(data_dir / "inspect" / inspect_id)
    ctx = RunContext(run_settings, backend, inspect_id, scratch)
    with hold_leases(backend, data_dir, inspect_id):
        err_console.print(f"Recreating the grading state of {instance_id} from run {run_dir}:")
        prepared = recreate(ctx, instance, RunDir(run_dir))
        try:
            err_console.print(f"Container {prepared.sandbox.name}:")
            _say(prepared)
            code = _open_shell(backend, prepared.sandbox.id, shell, True)
        finally:
            if keep:
                err_console.print(f"Kept {prepared.sandbox.name} (remove it with `swe-green gc`).")
            else:
                prepared.sandbox.remove()
                err_console.print(f"Removed {prepared.sandbox.name}.")
                shutil.rmtree(scratch.path, ignore_errors=True)
    return code
