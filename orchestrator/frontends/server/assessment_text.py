"""What the requester of an assessment reads: progress and heartbeat texts, the summary, the
leaderboard data part, and the progress updates (a finished instance, a heartbeat)."""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.types import Part

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.server.assessment import AssessmentRequest
from orchestrator.grading.classify import LeaderboardRow
from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.run.leaderboard import write_leaderboard

# errors that say the host cannot evaluate, not that the participant did badly
_INFRA_REASONS = (Reason.INFRASTRUCTURE, Reason.ENVIRONMENT)


def instance_summary(result: InstanceResult) -> dict[str, Any]:
    """One instance's result in brief: status, reason, test counts (for updates, artifacts)."""
    tests = result.tests
    return {
        "instance_id": result.instance_id,
        "repo": result.repo,
        "status": result.status.value,
        "reason": result.reason.value,
        "message": result.message,
        "fail_to_pass_passed": len(tests.fail_to_pass_passed),
        "fail_to_pass_total": len(tests.fail_to_pass_passed) + len(tests.fail_to_pass_failed),
        "pass_to_pass_passed": len(tests.pass_to_pass_passed),
        "pass_to_pass_total": len(tests.pass_to_pass_passed) + len(tests.pass_to_pass_failed),
        "apply_strategy": result.apply_strategy,
        "tool_calls": result.tool_calls,
        "seconds": result.timings.get("total"),
    }


def progress_text(done: int, total: int, result: InstanceResult) -> str:
    """``3/10 demo__calc-1: resolved`` (with the reason when there is one)."""
    reason = f" ({result.reason.value})" if result.reason.value else ""
    return f"{done}/{total} {result.instance_id}: {result.status.value}{reason}"


def heartbeat_text(done: int, total: int, in_flight: dict[str, str], elapsed: float) -> str:
    running = ", ".join(f"{iid} ({phase})" for iid, phase in sorted(in_flight.items()))
    minutes, seconds = divmod(int(elapsed), 60)
    return (
        f"{done}/{total} done after {minutes}m{seconds:02d}s; "
        f"running: {running or 'nothing (finishing)'}"
    )


def dataset_title(dataset: str) -> str:
    """How a summary names the dataset that ran: a benchmark by its name, an alias by its
    benchmark's, a local file or directory by its last two names (``demo/instances.jsonl``)."""
    from pathlib import PurePath

    from orchestrator.dataset.task_repo import BENCHMARK_NAMES, DATASET_ALIASES

    name = DATASET_ALIASES.get(dataset.lower(), dataset)
    if name in BENCHMARK_NAMES:
        return BENCHMARK_NAMES[name][0]
    parts = PurePath(name).parts
    return f"Dataset {'/'.join(parts[-2:]) if parts else name}"


def summary_text(
    row: LeaderboardRow, participant_id: str, run_id: str, ignored: str = "", *, dataset: str
) -> str:
    """The artifact's human summary: one paragraph of prose (never valid JSON), naming the
    dataset that ran."""
    counts = [
        f"{getattr(row, f'{status.value}_count')} {status.value}"
        for status in Status
        if getattr(row, f"{status.value}_count")
    ]
    return prose(
        f"{dataset_title(dataset)}: {participant_id} resolved {row.resolved_count} of "
        f"{row.total_instances} instance(s) ({row.resolved_pct:.1%}). "
        f"Outcomes: {', '.join(counts) or 'none'}. "
        f"FAIL_TO_PASS tests passing: {row.fail_to_pass_passed_pct:.1%}; "
        f"PASS_TO_PASS tests passing: {row.pass_to_pass_passed_pct:.1%}. Run {run_id}."
        + (f" {ignored}" if ignored else "")
    )


def leaderboard_data(
    run_dir: RunDir,
    request: AssessmentRequest,
    participant_id: str,
    results: list[InstanceResult],
) -> tuple[LeaderboardRow, dict[str, Any]]:
    """Write the run's ``results.json``; the leaderboard row and the artifact's data part: the
    row's keys (what the leaderboard queries read) plus the run, the participant's role (the
    key of its id among the submission's ids), the shard and the per-instance results."""
    path = write_leaderboard(run_dir, request.role, participant_id, results)
    payload = json.loads(path.read_text(encoding="utf-8"))
    row = LeaderboardRow.model_validate(payload["results"][0])
    data = {
        **payload["results"][0],
        "benchmark": payload["benchmark"],
        "run_id": run_dir.path.name,
        "participant_role": request.role,
        "participant_id": participant_id,
        "shard": request.selection().shard or "1/1",
        "instances": [instance_summary(r) for r in results],
    }
    return row, data


def prose(text: str) -> str:
    """``text``, made sure not to parse as JSON (the gateway would take it for a result)."""
    try:
        json.loads(text)
    except ValueError:
        return text
    return f"Summary: {text}"


def infrastructure_failure(
    results: list[InstanceResult], reached_participant: set[str]
) -> str | None:
    """Why the host could not evaluate at all, or None: every instance ended in an
    infrastructure or environment error before its participant was called."""
    if not results:
        return None
    for result in results:
        if (
            result.status != Status.ERROR
            or result.reason not in _INFRA_REASONS
            or result.tool_calls
            or result.instance_id in reached_participant
        ):
            return None
    messages = list(
        dict.fromkeys(
            (r.message.strip().splitlines() or [r.reason.value])[0][:300] for r in results
        )
    )
    shown = "; ".join(messages[:3]) + (
        f"; and {len(messages) - 3} more" if len(messages) > 3 else ""
    )
    return (
        f"The green agent could not evaluate: all {len(results)} instance(s) failed before the "
        f"participant was called ({shown}). Fix the green agent's host: a Docker engine it can "
        "use, the base images (`swe-green images build`), access to the repositories "
        "(mirror_dir or the network), a recipe or an API key for the setup agent, then run "
        "the assessment again."
    )


def finished_parts(done: int, total: int, result: InstanceResult) -> list[Part]:
    """The ``working`` update for a finished instance: its progress line and its summary."""
    summary = instance_summary(result) | {"type": "instance_result", "done": done, "total": total}
    return [new_text_part(progress_text(done, total, result)), new_data_part(summary)]


def heartbeat_parts(
    done: int, total: int, statuses: dict[str, int], in_flight: dict[str, str], elapsed: float,
    host_slots: int,
) -> list[Part]:  # fmt: skip
    """The ``working`` update of a heartbeat: what is done, what is in flight, what queues."""
    text = heartbeat_text(done, total, in_flight, elapsed)
    queued = sum(phase == "queued" for phase in in_flight.values())
    if queued:
        text += (
            f"; {queued} queued for the host's {host_slots} instance "
            "slot(s), busy with other assessments"
        )
    data = {
        "type": "heartbeat", "done": done, "total": total, "statuses": statuses,
        "in_flight": in_flight, "queued": queued, "elapsed": round(elapsed, 1),
    }  # fmt: skip
    return [new_text_part(text), new_data_part(data)]
