"""``swe-green run`` (a batch job, resumable) and ``swe-green demo``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli import common as cli
from orchestrator.frontends.cli.common import console, err_console, present, start_cli_run
from orchestrator.frontends.cli.live_progress import LiveProgress
from orchestrator.frontends.cli.participant_checks import check_card, participant_name
from orchestrator.frontends.cli.participant_factory import (
    PARTICIPANT_KINDS,
    check_participant_spec,
    open_participant,
)
from orchestrator.frontends.cli.run_plan import RunPlan, resumed
from orchestrator.log import run_log
from orchestrator.participant.protocol import A2AParticipant, Participant
from orchestrator.run.leaderboard import write_leaderboard
from orchestrator.run.outcome import EXIT_INTERRUPTED
from orchestrator.settings import Settings, load_settings, option_help, setting_choices

if TYPE_CHECKING:
    from orchestrator.context.run_dir import RunDir
    from orchestrator.models import InstanceResult

ParticipantSpec = Annotated[
    str | None,
    typer.Option(help=f"Participant A2A URL, or a reference participant: {PARTICIPANT_KINDS}."),
]
Script = Annotated[Path | None, typer.Option(help="The scripted participant's JSON script.")]
Strategy = Annotated[
    str | None,
    typer.Option(help=option_help("setup_strategy", f"Setup: {setting_choices('setup_strategy')}")),
]
InstanceTimeout = Annotated[
    float | None,
    typer.Option(help=option_help("instance_timeout", "Participant s per instance")),
]
TestTimeout = Annotated[
    float | None,
    typer.Option(help=option_help("test_timeout", "Seconds per test run")),
]
NoValidate = Annotated[
    bool, typer.Option("--no-validate", help="Skip the environment check with the gold patch.")
]
Wider = Annotated[
    bool,
    typer.Option(
        "--wider",
        help="Beside each resolved verdict, run the repository's tests beyond the task's "
        "against the gold patch's (setting wider_tests).",
    ),
]
Output = Annotated[Path | None, typer.Option(help="Run directory (default: <runs_dir>/<run id>).")]
ParticipantId = Annotated[
    str | None, typer.Option(help="Id in results.json (default: from --participant).")
]
Resume = Annotated[
    Path | None,
    typer.Option(help="Continue an interrupted run with its recorded settings."),
]
RayAddress = Annotated[
    str | None, typer.Option("--ray", help="Run on this Ray cluster (auto, host:6379).")
]
PredictionsFile = Annotated[
    Path | None,
    typer.Option(help="Grade a predictions file (.jsonl/.json, preds.json, <id>/patch.diff "
                 "directory) instead of a participant."),
]  # fmt: skip


def run_cmd(
    participant: ParticipantSpec = None, script: Script = None,
    ids: cli.Ids = None, pattern: cli.Pattern = None, repo: cli.Repo = None,
    count: cli.Count = None, shard: cli.Shard = None, dataset: cli.Dataset = None,
    concurrency: cli.Concurrency = None, strategy: Strategy = None,
    instance_timeout: InstanceTimeout = None, test_timeout: TestTimeout = None,
    no_validate: NoValidate = False, output: Output = None, participant_id: ParticipantId = None,
    resume: Resume = None, ray: RayAddress = None, predictions: PredictionsFile = None,
    wider: Wider = False,
) -> None:  # fmt: skip
    """Evaluate a participant on a selection of instances (batch job).

    Exit status: 0 graded, 2 usage or set-up error, 3 finished but graded nothing (every
    instance an infrastructure or participant-connection error), 130 interrupted."""
    from orchestrator.dataset.instances import Selection

    overrides: dict[str, object] = {
        "dataset": dataset, "setup_strategy": strategy, "instance_timeout": instance_timeout,
        "test_timeout": test_timeout, "validate_env": False if no_validate else None,
        "ray_address": ray, "wider_tests": True if wider else None,
    }  # fmt: skip
    if predictions is not None and participant is not None:
        raise UserError(
            "--participant and --predictions both given.", "grade one or the other per run."
        )
    plan = RunPlan(
        participant=participant, participant_id=participant_id, concurrency=concurrency,
        selection=Selection(ids=ids, pattern=pattern, repo=repo, count=count, shard=shard),
        overrides=present(overrides), script=script,
        predictions=str(predictions.resolve()) if predictions is not None else None,
    )  # fmt: skip
    if resume is not None:
        plan = resumed(plan, resume)
    _run_batch(plan, resume=resume, output=output)


def _run_batch(plan: RunPlan, *, resume: Path | None, output: Path | None) -> None:
    """Check everything, start (or resume) the run, evaluate it with the live display,
    then report. A check that fails leaves no run directory behind."""
    from orchestrator.dataset.instances import resolve
    from orchestrator.setup import check_strategy_settings

    if not plan.participant and not plan.predictions:
        raise UserError(
            "No participant given.",
            f"pass --participant URL (or one of {PARTICIPANT_KINDS}), or --predictions FILE.",
        )
    settings = load_settings(**plan.overrides)
    cli.check_writable(settings, output or resume, "--output" if output else "--resume")
    predicted = None
    if plan.predictions:
        predicted, instances = _predicted(settings, plan)
        plan.participant_id = plan.participant_id or predicted.model
    else:
        check_participant_spec(plan.participant or "", settings, plan.script)
        instances = resolve(settings, plan.selection)
    if not instances:
        raise UserError("The selection holds no instance.", "check --id/--pattern/--repo/--shard.")
    check_strategy_settings(settings)
    with open_participant(
        plan.participant, settings, script=plan.script, predictions=predicted
    ) as participant:
        if isinstance(participant, A2AParticipant):
            check_card(participant.url)
        ctx = start_cli_run(
            settings, "run", resume, output, run_id=plan.run_id,
            participant=plan.participant, participant_id=plan.participant_id,
            predictions=plan.predictions, concurrency=plan.concurrency,
            selection=plan.selection.model_dump(exclude_none=True),
            settings_overrides=plan.overrides, instances=[i.instance_id for i in instances],
            script=str(plan.script) if plan.script else None,
        )  # fmt: skip
        console.print(f"run {ctx.run_id}: {len(instances)} instance(s) -> {ctx.run_dir.path}")
        # the live display owns the terminal; the log goes to <run>/run.log (stderr with -v)
        with _no_husk(ctx.run_dir.path, resume), run_log(ctx.run_dir.path) as log_path:
            results = _evaluate_live(
                ctx, instances, participant, plan.concurrency, resumed=resume is not None
            )
    _report(plan, ctx.run_dir, results, log_path)


def _report(plan: RunPlan, run_dir: RunDir, results: list[InstanceResult], log_path: Path) -> None:
    """The leaderboard entry and the report of a finished run; exit status 3 when it graded
    nothing."""
    from orchestrator.frontends.report import print_report
    from orchestrator.frontends.viewer import write_viewer
    from orchestrator.run.outcome import run_exit_code

    name = plan.participant_id or participant_name(plan.participant or "")
    path = write_leaderboard(run_dir, "agent", name, results)
    print_report(run_dir, console=console)
    console.print(f"log: {log_path}")
    console.print(f"results: {path}")
    console.print(f"viewer: {write_viewer(run_dir)}")
    code = run_exit_code(results)
    if code:
        err_console.print(
            f"graded nothing: all {len(results)} instance(s) ended in an infrastructure, "
            "environment or participant-connection error (exit status 3); see the report above."
        )
        raise typer.Exit(code)


@contextlib.contextmanager
def _no_husk(run_dir: Path, resume: Path | None) -> Iterator[None]:
    """A new run that fails to start (a UserError before any instance finished) leaves no
    run directory behind."""
    import shutil

    try:
        yield
    except UserError:
        if resume is None and not (run_dir / "instances").is_dir():
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _predicted(settings: Settings, plan: RunPlan):  # noqa: ANN202
    """The predictions and the instances they are graded on: the file's, or those of the
    selection that the file has a prediction for."""
    from orchestrator.dataset.instances import load_instances, select
    from orchestrator.participant.predictions import load_predictions

    assert plan.predictions is not None
    dataset = load_instances(settings.dataset.dataset, settings.dataset.dataset_split)
    predicted = load_predictions(Path(plan.predictions), (i.instance_id for i in dataset))
    chosen = select(dataset, **plan.selection.model_dump())
    instances = [i for i in chosen if i.instance_id in predicted.patches]
    if not instances:
        raise UserError(
            f"No instance of the selection has a prediction in {plan.predictions}.",
            "widen the selection, or leave it out to grade the file's instances.",
        )
    return predicted, instances


def _evaluate_live(  # noqa: ANN202
    ctx,
    instances,
    participant: Participant,
    concurrency: int | None,
    *,
    resumed: bool,  # noqa: ANN001
):
    """The scheduler's results, with the live display; Ctrl-C or SIGTERM keeps what is done."""
    from orchestrator.run.scheduler import interruptible, run_evaluation
    from orchestrator.run.select_runner import runner_for

    progress = LiveProgress(len(instances))
    runner = runner_for(ctx.settings)  # this host, or the Ray cluster of ray_address
    evaluation = run_evaluation(
        ctx, instances, participant, concurrency=concurrency, on_event=progress.update,
        resume=resumed,
        runner=runner,
    )  # fmt: skip
    try:
        with progress.live_display():
            return asyncio.run(interruptible(evaluation))
    except KeyboardInterrupt:
        runner.clean_unfinished(ctx, ctx.run_dir.finished_ids())
        run_dir = ctx.run_dir.path
        err_console.print(
            f"interrupted: finished results kept in {run_dir}; continue with "
            f"`swe-green run --resume {run_dir}`"
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        runner.close()


# --------------------------------------------------------------------------- demo
def demo_cmd(
    participant: Annotated[
        str, typer.Option(help=f"A reference participant ({PARTICIPANT_KINDS}) or an A2A URL.")
    ] = "gold",
    concurrency: cli.Concurrency = None,
    script: Annotated[
        Path | None, typer.Option(help="The scripted participant's JSON script.")
    ] = None,
) -> None:
    """Evaluate the synthetic instances offline (no GitHub, no Hugging Face)."""
    from orchestrator.dataset.instances import Selection
    from orchestrator.dataset.synthetic import build_synthetic
    from orchestrator.settings import setting_sources

    settings = load_settings()
    demo_dir = build_synthetic(settings.storage.data_dir / "demo")
    from_env = {name for name, source in setting_sources().items() if source == "env"}
    defaults = {"unprivileged_tests": True, "setup_strategy": "recipe"}
    overrides = {k: v for k, v in defaults.items() if k not in from_env} | {
        "dataset": str(demo_dir / "instances.jsonl"),
        "mirror_dir": str(demo_dir / "mirrors"),
        "recipes_file": str(demo_dir / "recipes.json"),
    }
    plan = RunPlan(
        participant=participant, participant_id=f"{participant}-demo", concurrency=concurrency,
        selection=Selection(), overrides=overrides, script=script,
    )  # fmt: skip
    _run_batch(plan, resume=None, output=None)
