"""``swe-green tasks``: new tasks from a repository's history. ``collect`` writes a
repository's candidates, ``validate`` validates every candidate of a tasks directory into
its dataset (``tasks.jsonl`` and the task repository ``task-repo/``, which every command
takes as ``--dataset``) and its report (``tasks.md``)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from orchestrator.atomic import atomic_write_text
from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import console, start_cli_run
from orchestrator.settings import load_settings

TasksDir = Annotated[
    Path, typer.Option("--out", help="The tasks directory (one folder per repository).")
]
NewerThan = Annotated[
    str | None,
    typer.Option(help="A date (2025-06-01): the report counts the kept tasks created after it."),
]
CANDIDATES, COLLECTED, TASK_REPO = "candidates.jsonl", "collect.json", "task-repo"
T = TypeVar("T")


def tasks_collect(
    repo: Annotated[str, typer.Argument(help="The repository, owner/name (its mirror is used).")],
    out: TasksDir = Path("tasks"),
    since: Annotated[str, typer.Option(help="The first day (git's date syntax).")] = "",
    until: Annotated[str, typer.Option(help="The last day (git's date syntax).")] = "",
    issues: Annotated[
        Path | None,
        typer.Option(help="An exported issues file (JSON lines, GitHub's issue objects)."),
    ] = None,
    github_token_env: Annotated[
        str | None,
        typer.Option(
            help="The environment variable holding a GitHub token: issues read from its API."
        ),
    ] = None,
    ref: Annotated[
        str, typer.Option(help="The branch whose first-parent history is read.")
    ] = "HEAD",
) -> None:
    """Collect a repository's candidate tasks: its changes in a date range that fix something
    and touch tests (merged pull requests where the history has them, else commits), in
    SWE-bench's format, with FAIL_TO_PASS and PASS_TO_PASS left to `tasks validate`.

    The repository is read from its mirror (SWE_GREEN_MIRROR_DIR / SWE_GREEN_REPO_URL_TEMPLATE,
    as every command reads it). Writes OUT/owner__name/candidates.jsonl and collect.json.
    """
    import os

    from orchestrator.repos.repo_cache import ensure_mirror
    from orchestrator.tasks.collect import collect
    from orchestrator.tasks.statements import GitHubIssues, IssuesFile, IssueSource, NoIssues

    if repo.count("/") != 1:
        raise UserError(f"Repository {repo!r} is not owner/name.", "write e.g. pallets/click.")
    settings = load_settings()
    source: IssueSource = NoIssues()
    if issues is not None:
        source = IssuesFile(issues)
    elif github_token_env:
        token = os.environ.get(github_token_env, "")
        if not token:
            raise UserError(
                f"The variable {github_token_env} is empty.", "export a GitHub token in it."
            )
        source = GitHubIssues(repo, token)
    mirror = ensure_mirror(settings, repo)
    candidates, report = collect(mirror, repo, since, until, source, ref)
    folder = out / repo.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / CANDIDATES, "".join(c.model_dump_json() + "\n" for c in candidates))
    atomic_write_text(folder / COLLECTED, report.model_dump_json(indent=1))
    console.print(
        f"{repo}: {report.changes} {report.mode}, {report.candidates} candidate(s) in "
        f"{report.environments} environment(s); {folder / CANDIDATES}"
    )
    for reason, count in report.by_reason().items():
        console.print(f"  rejected: {reason} ({count})")


def tasks_validate(
    out: TasksDir = Path("tasks"),
    repo: Annotated[str | None, typer.Option(help="Only this repository (owner/name).")] = None,
    count: Annotated[int | None, typer.Option(help="At most N candidates per repository.")] = None,
    strategy: Annotated[
        str, typer.Option(help="The set-up strategy: infer, auto or llm.")
    ] = "infer",
    runs: Annotated[int, typer.Option(help="Gold test runs per task (flaky tests differ).")] = 2,
    newer_than: NewerThan = None,
    report_only: Annotated[
        bool, typer.Option("--report-only", help="Validate nothing: report what the run holds.")
    ] = False,
    again: Annotated[
        bool,
        typer.Option(
            "--again",
            help="Validate again the candidates the run rejected (the kept tasks stay).",
        ),
    ] = False,
) -> None:
    """Validate the candidates of a tasks directory (resumable: run it again to go on): each
    environment built, the tests found (fail before the fix, pass after it), validated as
    `swe-green validate` does, twice. Writes OUT/tasks.jsonl and OUT/task-repo (the kept
    tasks: a JSONL dataset and a SWE-bench task repository, each for --dataset) and
    OUT/tasks.md (the report)."""
    from orchestrator.dataset.task_repo import write_task_repo
    from orchestrator.models import Instance
    from orchestrator.run.results_file import benchmark_name
    from orchestrator.tasks.collect import Candidate, CollectReport
    from orchestrator.tasks.report import markdown, repo_tasks
    from orchestrator.tasks.validate import load_task_record, validate_all

    when = _when(newer_than)
    folders = sorted(p.parent for p in out.glob(f"*/{CANDIDATES}"))
    if repo is not None:
        folders = [f for f in folders if f.name == repo.replace("/", "__")]
    if not folders:
        raise UserError(
            f"No candidates in {out}.", "run `swe-green tasks collect REPO --out DIR` first."
        )
    by_repo: dict[Path, list[Candidate]] = {}
    for folder in folders:
        lines = (folder / CANDIDATES).read_text().splitlines()
        candidates = [Candidate.model_validate_json(line) for line in lines if line.strip()]
        by_repo[folder] = candidates[:count] if count else candidates
    # the run's dataset: what it validates (the environments' shared history reads it)
    dataset = out / CANDIDATES
    chosen = round_robin(by_repo)
    atomic_write_text(dataset, "".join(c.model_dump_json() + "\n" for c in chosen))
    settings = load_settings(setup_strategy=strategy, validation_runs=runs, dataset=str(dataset))
    # the run is named for the tasks directory: its containers and images are told apart
    run_dir = out / f"tasks-{out.resolve().name}"
    ctx = start_cli_run(
        settings, "tasks", run_dir if run_dir.is_dir() else None, run_dir, command="tasks validate"
    )

    def done(record) -> None:  # noqa: ANN001
        mark = "kept" if record.kept else f"rejected: {record.reason[:120]}"
        console.print(f"{record.instance_id}: {mark} ({record.seconds:.0f} s)")

    if report_only:
        held = (load_task_record(ctx, c) for c in chosen)
        records = {r.instance_id: r for r in held if r is not None}
    else:
        records = {r.instance_id: r for r in validate_all(ctx, chosen, done, again)}
    summaries, kept = [], []
    for folder, candidates in by_repo.items():
        tasks = []
        for candidate in candidates:
            task_file = ctx.instance_dir(candidate) / "task.jsonl"
            record = records.get(candidate.instance_id)
            if record is not None and record.kept and task_file.is_file():
                tasks.append(Instance.model_validate_json(task_file.read_text()))
                kept.append(task_file.read_text())
        ran = [records[c.instance_id] for c in candidates if c.instance_id in records]
        collected = CollectReport.model_validate_json((folder / COLLECTED).read_text())
        summaries.append(repo_tasks(collected, ran, tasks, when))
    atomic_write_text(out / "tasks.jsonl", "".join(kept))
    write_task_repo(
        out / TASK_REPO,
        [json.loads(line) for line in kept],
        benchmark_name(str(out / "tasks.jsonl")),
    )
    atomic_write_text(out / "tasks.md", markdown(summaries, when))
    atomic_write_text(out / "tasks.json", json.dumps([s.model_dump() for s in summaries], indent=1))
    console.print(markdown(summaries, when))
    console.print(f"{len(kept)} task(s) in {out / 'tasks.jsonl'}")


def round_robin(by_repo: dict[Path, list[T]]) -> list[T]:
    """The first candidate of every repository, then the second ones, ...: a run stopped
    early covers every repository."""
    lists = list(by_repo.values())
    return [row[i] for i in range(max(map(len, lists), default=0)) for row in lists if i < len(row)]


def _when(newer_than: str | None) -> datetime | None:
    from orchestrator.tasks.report import parse_time

    if newer_than is None:
        return None
    try:
        return parse_time(newer_than)
    except ValueError:
        raise UserError(
            f"--newer-than {newer_than!r} is not a date.", "write e.g. 2025-06-01."
        ) from None
