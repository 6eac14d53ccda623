"""New tasks from repositories' histories (``swe-green tasks``): per repository the changes
looked at, the candidates, those validated and kept, the reasons of the others (at
collection and at validation), the inferred environments (built, keeping a task), the time
per kept task, and how many kept tasks are newer than a date.

Reads tasks directories (``swe-green tasks collect --out DIR`` then ``swe-green tasks
validate --out DIR``): each repository's ``collect.json`` and the run's records.

With ``--graded RUN`` (a ``swe-green run`` of the kept tasks, e.g. with the reference
participants ``gold`` and ``empty``): each run's participant and its statuses.

Run: ``python bench/tasks_yield.py DIR [DIR ...] [--newer-than 2025-06-01] [--graded RUN
...]``; ``--smoke``: a made-up tasks directory (what CI runs).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from orchestrator.models import Instance
from orchestrator.run.results_file import ResultsFile
from orchestrator.tasks.collect import CollectReport
from orchestrator.tasks.report import RepoTasks, markdown, parse_time, repo_tasks, totals
from orchestrator.tasks.validate import TaskRecord


def read_dir(out: Path, newer_than: str | None) -> list[RepoTasks]:
    """Every repository of a tasks directory, with its run's records and kept tasks."""
    when = parse_time(newer_than) if newer_than else None
    found = []
    for collected_file in sorted(out.glob("*/collect.json")):
        collected = CollectReport.model_validate_json(collected_file.read_text())
        owner_name = collected.repo.replace("/", "__")
        records, tasks = [], []
        for path in sorted(out.glob(f"tasks-*/instances/{owner_name}-*/task.json")):
            record = TaskRecord.model_validate_json(path.read_text())
            if record.cause == "infrastructure (run again)":
                continue
            records.append(record)
            task_file = path.with_name("task.jsonl")
            if record.kept and task_file.is_file():
                tasks.append(Instance.model_validate_json(task_file.read_text()))
        found.append(repo_tasks(collected, records, tasks, when))
    return found


def graded(run: Path) -> str:
    """A run's participant and how many of its instances got each status."""
    results = ResultsFile.model_validate_json((run / "results.json").read_text())
    statuses: dict[str, int] = {}
    for row in results.instances:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    who = ", ".join(results.participants.values())
    counts = ", ".join(f"{status} {n}" for status, n in sorted(statuses.items()))
    return f"graded with {who}: {len(results.instances)} tasks: {counts}"


def _smoke(root: Path) -> Path:
    collected = CollectReport(
        repo="acme/widget", since="2025-01-01", until="", mode="pull requests", changes=10,
        candidates=2, statement_sources={"pull request": 2}, environments=1, seconds=0.1,
        first="2025-01-01T00:00:00Z", last="2025-03-02T00:00:00Z",
    )  # fmt: skip
    (root / "acme__widget").mkdir(parents=True)
    (root / "acme__widget/collect.json").write_text(collected.model_dump_json())
    for number, kept in ((1, True), (2, False)):
        folder = root / f"tasks-smoke/instances/acme__widget-{number}"
        folder.mkdir(parents=True)
        record = TaskRecord(
            instance_id=f"acme__widget-{number}", repo="acme/widget", version="v", kept=kept,
            stage="done" if kept else "discovery", seconds=30,
            reason="" if kept else "no test fails before the fix and passes after it",
        )  # fmt: skip
        (folder / "task.json").write_text(record.model_dump_json())
        if kept:
            task = Instance(
                instance_id=record.instance_id, repo="acme/widget", base_commit="a",
                environment_setup_commit="a", created_at="2025-07-01T00:00:00Z",
            )  # fmt: skip
            (folder / "task.jsonl").write_text(task.model_dump_json() + "\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--newer-than", default=None)
    parser.add_argument("--graded", nargs="*", type=Path, default=[])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dirs = [_smoke(Path(scratch))] if args.smoke else args.dirs
        newer = "2025-06-01" if args.smoke else args.newer_than
        repos = [r for d in dirs for r in read_dir(d, newer)]
        print(markdown(repos, parse_time(newer) if newer else None))
        print(totals(repos))
        for run in args.graded:
            print(graded(run))


if __name__ == "__main__":
    main()
