"""``swe-green run`` (a batch job, resumable) and ``swe-green demo``: their options; the run
itself is :mod:`.run_batch`, imported when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.frontends.cli import common as cli
from orchestrator.frontends.cli.participant_checks import PARTICIPANT_KINDS
from orchestrator.frontends.cli.setting_help import option_help, setting_choices

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
    from orchestrator.errors import UserError
    from orchestrator.frontends.cli.run_batch import run_batch
    from orchestrator.frontends.cli.run_plan import RunPlan, resumed

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
        overrides=cli.present(overrides), script=script,
        predictions=str(predictions.resolve()) if predictions is not None else None,
    )  # fmt: skip
    if resume is not None:
        plan = resumed(plan, resume)
    run_batch(plan, resume=resume, output=output)


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
    from orchestrator.frontends.cli.run_batch import run_batch
    from orchestrator.frontends.cli.run_plan import RunPlan
    from orchestrator.settings import load_settings, setting_sources

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
    run_batch(plan, resume=None, output=None)
