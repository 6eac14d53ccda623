"""``swe-green run`` (a batch job, resumable) and ``swe-green demo``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.errors import UserError
from orchestrator.frontends import cli_common as cli
from orchestrator.frontends.cli_common import (
    console,
    err_console,
    present,
    read_json,
    start_cli_run,
)
from orchestrator.frontends.live_progress import LiveProgress
from orchestrator.log import run_log
from orchestrator.settings import Settings, load_settings

# the reference participants, in the words of every command's help
PARTICIPANT_KINDS = "gold, empty, scripted (with --script), claude (needs ANTHROPIC_API_KEY)"


# --------------------------------------------------------------------------- run
@contextlib.contextmanager
def _participant(spec: str, settings: Settings, script: Path | None = None) -> Iterator[str]:
    """A participant URL; a reference participant's name starts it for the run."""
    if spec.startswith(("http://", "https://")):
        yield spec
        return
    from orchestrator.participant.reference import make_participant, running

    check_participant_spec(spec, settings, script)
    participant = make_participant(spec, dataset=settings.dataset.dataset, script=script)
    with running(participant, host=_reference_host(settings)) as url:
        yield url


def check_participant_spec(spec: str, settings: Settings, script: Path | None) -> None:
    """A URL, or a reference participant whose requirements are met (before any run starts)."""
    import os

    from orchestrator.participant.reference import KINDS

    if spec.startswith(("http://", "https://")):
        return
    if spec not in KINDS:
        raise UserError(
            f"{spec!r} is neither a URL nor a reference participant.",
            f"pass an http(s) URL or one of: {', '.join(KINDS)}.",
        )
    if spec == "scripted" and script is None:
        raise UserError("The scripted participant needs a script.", "pass --script FILE.")
    if spec == "claude" and not (
        settings.setup_agent.anthropic_key() or os.environ.get("ANTHROPIC_API_KEY")
    ):
        raise UserError(
            "The claude participant needs an Anthropic API key.",
            "set ANTHROPIC_API_KEY (or SWE_GREEN_ANTHROPIC_API_KEY), or pick another participant.",
        )


def _reference_host(settings: Settings) -> str:
    """Where a reference participant listens: loopback, or on a Ray cluster the address of
    this host that the other nodes reach."""
    address = settings.run.ray_address or ""
    if not address or address.split("://")[-1].startswith(("127.", "localhost")):
        return "127.0.0.1"
    from ray.util import get_node_ip_address

    return get_node_ip_address()


def run_cmd(
    participant: Annotated[
        str | None,
        typer.Option(help=f"Participant A2A URL, or a reference participant: {PARTICIPANT_KINDS}."),
    ] = None,
    script: Annotated[
        Path | None, typer.Option(help="The scripted participant's JSON script.")
    ] = None,
    ids: cli.Ids = None, pattern: cli.Pattern = None, repo: cli.Repo = None,
    count: cli.Count = None, shard: cli.Shard = None, dataset: cli.Dataset = None,
    concurrency: cli.Concurrency = None,
    strategy: Annotated[
        str | None,
        typer.Option(help="Setup: auto, recipe or llm (setting setup_strategy, default auto)."),
    ] = None,
    instance_timeout: Annotated[
        float | None,
        typer.Option(help="Participant s per instance (setting instance_timeout, default 3600)."),
    ] = None,
    test_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds per test run (setting test_timeout, default 1800)."),
    ] = None,
    no_validate: Annotated[
        bool, typer.Option("--no-validate", help="Skip the environment check with the gold patch.")
    ] = False,
    output: Annotated[
        Path | None, typer.Option(help="Run directory (default: <runs_dir>/<run id>).")
    ] = None,
    participant_id: Annotated[
        str | None, typer.Option(help="Id in results.json (default: from --participant).")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="Continue an interrupted run with its recorded settings."),
    ] = None,
    ray: Annotated[
        str | None, typer.Option("--ray", help="Run on this Ray cluster (auto, host:6379).")
    ] = None,
    predictions: Annotated[
        Path | None,
        typer.Option(help="Grade a predictions file (.jsonl/.json, preds.json, <id>/patch.diff "
                     "directory) instead of a participant."),
    ] = None,
) -> None:  # fmt: skip
    """Evaluate a participant on a selection of instances (batch job).

    Exit status: 0 graded, 2 usage or set-up error, 3 finished but graded nothing (every
    instance an infrastructure or participant-connection error), 130 interrupted."""
    from orchestrator.dataset.instances import Selection

    overrides: dict[str, object] = {
        "dataset": dataset, "setup_strategy": strategy, "instance_timeout": instance_timeout,
        "test_timeout": test_timeout, "validate_env": False if no_validate else None,
        "ray_address": ray,
    }  # fmt: skip
    if predictions is not None and participant is not None:
        raise UserError(
            "--participant and --predictions both given.", "grade one or the other per run."
        )
    plan = _RunPlan(
        participant=participant, participant_id=participant_id, concurrency=concurrency,
        selection=Selection(ids=ids, pattern=pattern, repo=repo, count=count, shard=shard),
        overrides=present(overrides), script=script,
        predictions=str(predictions.resolve()) if predictions is not None else None,
    )  # fmt: skip
    if resume is not None:
        plan = _resumed(plan, resume)
    _run_batch(plan, resume=resume, output=output)


@dataclasses.dataclass
class _RunPlan:
    """What a batch run evaluates, as given (or as saved by the run it resumes)."""

    participant: str | None
    participant_id: str | None
    concurrency: int | None
    selection: Any
    overrides: dict[str, object]
    run_id: str | None = None
    predictions: str | None = None  # a predictions file graded instead of a participant
    script: Path | None = None


# the settings that make a run what it is: a resumed run keeps the recorded ones
RESUME_PINNED = (
    "dataset", "dataset_split", "repo_url_template", "mirror_dir", "recipes_file",
    "setup_strategy", "validate_env", "validation_runs", "image_prefix", "base_python",
    "cpus", "memory", "pids_limit", "disk_limit", "max_tool_calls", "tool_timeout",
    "instance_timeout", "participant_timeout", "max_reply_bytes", "patch_fuzz", "test_timeout",
    "unprivileged_tests", "grade_in_participant_container", "docker_policy",
)  # fmt: skip


def _resumed(plan: _RunPlan, run_dir: Path) -> _RunPlan:
    """``plan`` completed from the ``config.json`` of the run it continues: the recorded
    dataset, mirrors, recipes, strategy and limits, whatever today's environment says. A
    setting given explicitly (option, environment, file) that differs is an error."""
    from orchestrator.dataset.instances import Selection
    from orchestrator.settings import setting_sources

    if not (run_dir / "config.json").exists():
        raise UserError(f"{run_dir} is not a run directory.", "pass the path `run` printed.")
    saved = read_json(run_dir / "config.json")
    recorded = saved.get("settings", {})
    pinned = {name: recorded[name] for name in RESUME_PINNED if name in recorded}
    given = {name for name, source in setting_sources().items() if source in ("env", "file")} | set(
        plan.overrides
    )
    if given & set(pinned):
        current = load_settings(**plan.overrides).flat()
        for name in sorted(given & set(pinned)):
            if not _same(current.get(name), pinned[name]):
                raise UserError(
                    f"--resume: {name} is {current.get(name)!r} here but the run was started "
                    f"with {pinned[name]!r}.",
                    f"leave {name} out (unset SWE_GREEN_{name.upper()}) to resume the same run, "
                    "or start a new run.",
                )
    if plan.participant and saved.get("participant") and plan.participant != saved["participant"]:
        raise UserError(
            f"--resume: the participant is {plan.participant!r} here but the run was started "
            f"with {saved['participant']!r}.",
            "leave --participant out to resume the same run, or start a new run.",
        )
    return _RunPlan(
        participant=plan.participant or saved.get("participant"),
        participant_id=plan.participant_id or saved.get("participant_id"),
        concurrency=plan.concurrency or saved.get("concurrency"),
        selection=Selection(**saved.get("selection", {})),
        overrides={**pinned, **saved.get("settings_overrides", {}), **plan.overrides},
        run_id=saved["run_id"],
        predictions=plan.predictions or saved.get("predictions"),
        script=plan.script or (Path(saved["script"]) if saved.get("script") else None),
    )


def _same(here: object, recorded: object) -> bool:
    if here == recorded:
        return True
    try:
        return float(here) == float(recorded)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(here) == str(recorded)


def _run_batch(plan: _RunPlan, *, resume: Path | None, output: Path | None) -> None:
    """Check everything, start (or resume) the run, evaluate it with the live display,
    then report. A check that fails leaves no run directory behind."""
    from orchestrator.dataset.instances import resolve
    from orchestrator.frontends.report import print_report
    from orchestrator.run.outcome import run_exit_code

    if not plan.participant and not plan.predictions:
        raise UserError(
            "No participant given.",
            f"pass --participant URL (or one of {PARTICIPANT_KINDS}), or --predictions FILE.",
        )
    settings = load_settings(**plan.overrides)
    cli.check_writable(settings, output)
    predicted = None
    if plan.predictions:
        predicted, instances = _predicted(settings, plan)
        plan.participant_id = plan.participant_id or predicted.model
    else:
        check_participant_spec(plan.participant or "", settings, plan.script)
        instances = resolve(settings, plan.selection)
    if not instances:
        raise UserError("The selection holds no instance.", "check --id/--pattern/--repo/--shard.")
    if settings.environment.setup_strategy == "llm":
        from orchestrator.environments.setup_llm import check_llm_settings

        check_llm_settings(settings)
    with contextlib.ExitStack() as stack:
        url = None
        if predicted is None:
            url = stack.enter_context(_participant(plan.participant or "", settings, plan.script))
            check_card(url)
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
                ctx, instances, predicted if predicted is not None else url, plan.concurrency,
                resumed=resume is not None,
            )  # fmt: skip
    name = plan.participant_id or _participant_name(plan.participant or "")
    path = ctx.run_dir.write_leaderboard("agent", name, results)
    print_report(ctx.run_dir, console=console)
    console.print(f"log: {log_path}")
    console.print(f"results: {path}")
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


def _predicted(settings: Settings, plan: _RunPlan):  # noqa: ANN202
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


def _evaluate_live(ctx, instances, url, concurrency: int | None, *, resumed: bool):  # noqa: ANN001, ANN202
    """The scheduler's results, with the live display; Ctrl-C or SIGTERM keeps what is done."""
    from orchestrator.run.runner import runner_for
    from orchestrator.run.scheduler import run_evaluation

    progress = LiveProgress(len(instances))
    runner = runner_for(ctx.settings)  # this host, or the Ray cluster of ray_address
    evaluation = run_evaluation(
        ctx, instances, url, concurrency=concurrency, on_event=progress.update, resume=resumed,
        runner=runner,
    )  # fmt: skip
    try:
        with progress.live_display():
            return asyncio.run(_run_interruptible(evaluation, ctx))
    except KeyboardInterrupt:
        runner.clean_unfinished(ctx, ctx.run_dir.finished_ids())
        run_dir = ctx.run_dir.path
        err_console.print(
            f"interrupted: finished results kept in {run_dir}; continue with "
            f"`swe-green run --resume {run_dir}`"
        )
        raise typer.Exit(130) from None
    finally:
        runner.close()


async def _run_interruptible(coro, ctx):  # noqa: ANN001, ANN202
    """Run ``coro``; on SIGTERM behave as on Ctrl-C."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coro)
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None


def check_card(url: str) -> None:
    """Fail before any instance when the participant's agent card does not answer 2xx with a
    JSON object."""
    import httpx

    card = url.rstrip("/") + "/.well-known/agent-card.json"
    fix = "start the participant, or check --participant."
    try:
        response = httpx.get(card, timeout=15)
    except httpx.HTTPError as exc:
        raise UserError(
            f"The participant at {url} does not answer ({exc.__class__.__name__}: {exc}).", fix
        ) from None
    if not response.is_success:
        raise UserError(
            f"The participant's agent card {card} answers HTTP {response.status_code}.", fix
        )
    try:
        parsed = response.json()
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise UserError(f"The participant's agent card {card} is not a JSON object.", fix)


def _participant_name(spec: str) -> str:
    return spec if not spec.startswith("http") else spec.rstrip("/").rsplit("/", 1)[-1] or spec


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
    plan = _RunPlan(
        participant=participant, participant_id=f"{participant}-demo", concurrency=concurrency,
        selection=Selection(), overrides=overrides, script=script,
    )  # fmt: skip
    _run_batch(plan, resume=None, output=None)
