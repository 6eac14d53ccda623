"""What a report says about why: each instance not resolved with its first failing tests or
the first line of its error, and the run's header (when, how long, what, where, which version).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report.data import STATUS_ORDER, format_seconds, reason_text
from orchestrator.models import InstanceResult, Reason, Status

FIRST_TESTS = 3  # failing tests named per group; the rest are counted
NOT_MEASURED = "—"  # where the tests did not run (an error, an empty patch)


def tests_measured(result: InstanceResult) -> bool:
    """Whether the tests ran for this result (an error or an empty patch runs none)."""
    return result.status != Status.ERROR and result.reason != Reason.EMPTY_PATCH


def tests_cell(passed: int, failed: int, measured: bool) -> str:
    """``passed/total``, or — where the tests were not measured."""
    return f"{passed}/{passed + failed}" if measured else NOT_MEASURED


def _named(tests: list[str], limit: int) -> str:
    shown = ", ".join(tests[:limit])
    return shown + (f" (+{len(tests) - limit} more)" if len(tests) > limit else "")


def first_line(message: str) -> str:
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def why(result: InstanceResult, limit: int = FIRST_TESTS) -> str:
    """One line on why ``result`` is not resolved: its error's first line, or the first
    FAIL_TO_PASS tests not passing and PASS_TO_PASS tests broken; "" when resolved."""
    if result.status == Status.RESOLVED:
        return ""
    if result.status == Status.ERROR or result.reason == Reason.EMPTY_PATCH:
        return first_line(result.message) or result.reason.value
    tests = result.tests
    parts = []
    if tests.fail_to_pass_failed:
        parts.append(f"FAIL_TO_PASS not passing: {_named(tests.fail_to_pass_failed, limit)}")
    if tests.pass_to_pass_failed:
        parts.append(f"PASS_TO_PASS broken: {_named(tests.pass_to_pass_failed, limit)}")
    return "; ".join(parts) or first_line(result.message)


@dataclass(frozen=True)
class NotResolved:
    instance_id: str
    status: Status
    reason: str  # with the SWE-bench 5.0 failure label, if any
    why: str
    verdict: str = ""  # the status with its marks (* reduced tests, ~ flaky)


def not_resolved(results: list[InstanceResult]) -> list[NotResolved]:
    """Every instance not resolved, by status (the report's order), then id."""
    rows = [
        NotResolved(r.instance_id, r.status, reason_text(r), why(r), r.verdict)
        for r in results
        if r.status != Status.RESOLVED
    ]
    return sorted(rows, key=lambda row: (STATUS_ORDER.index(row.status), row.instance_id))


# --------------------------------------------------------------------------- header

_RUN_STAMP = re.compile(r"-(\d{8}-\d{6})-")


@dataclass(frozen=True)
class RunHeader:
    started: str  # "2026-01-08 02:00 UTC", or "?"
    took: str  # wall time from the start to the last result, or "?"
    dataset: str
    participant: str
    hosts: str
    version: str

    def line(self) -> str:
        return (
            f"started {self.started} · took {self.took} · dataset {self.dataset} · "
            f"participant {self.participant} · host(s) {self.hosts} · swe-green {self.version}"
        )


def run_header(run: RunDir, results: list[InstanceResult]) -> RunHeader:
    """What the report's header says about the run, from ``config.json`` and the results."""
    config = run.read_config()
    settings = config.get("settings") or {}
    start = _start(config, run)
    ends = [path.stat().st_mtime for path in run.path.glob("instances/*/result.json")]
    took = format_seconds(max(ends) - start) if start and ends and max(ends) >= start else "?"
    started = (
        dt.datetime.fromtimestamp(start, dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if start else "?"
    )
    participant = config.get("participant_id") or config.get("participant") or "?"
    if config.get("participant") and config.get("participant") != participant:
        participant = f"{participant} ({config['participant']})"
    hosts = sorted({r.host for r in results if r.host}) or [config.get("host") or "?"]
    return RunHeader(
        started=started,
        took=took,
        dataset=str(settings.get("dataset") or config.get("dataset") or "?"),
        participant=str(participant),
        hosts=", ".join(hosts),
        version=str(config.get("version") or "?"),
    )


def missing_instances(run: RunDir, results: list[InstanceResult]) -> list[str]:
    """The instances the run selected (``config.json``'s ``instances``) that have no result:
    an interrupted run's (a killed ``run``, a ``serve`` that died mid-assessment)."""
    selected = run.read_config().get("instances") or []
    have = {r.instance_id for r in results}
    return [str(i) for i in selected if i not in have]


def missing_text(run: RunDir, results: list[InstanceResult]) -> str | None:
    """The report's line on the instances selected but not graded; None when there is none."""
    missing = missing_instances(run, results)
    if not missing:
        return None
    total = len(run.read_config().get("instances") or [])
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    shown = ", ".join(missing[:10]) + more
    return (
        f"Incomplete: {len(missing)} of {total} selected instance(s) have no result (the run "
        f"was interrupted), so the figures cover only the others: {shown}. Fix: "
        f"`swe-green run --resume {run.path}` grades them."
    )


def _start(config: dict, run: RunDir) -> float | None:
    """When the run started: the time in its id (UTC), else ``config.json``'s mtime."""
    match = _RUN_STAMP.search(str(config.get("run_id", "")))
    if match:
        stamp = dt.datetime.strptime(match[1], "%Y%m%d-%H%M%S").replace(tzinfo=dt.UTC)
        return stamp.timestamp()
    try:
        return run.config_path.stat().st_mtime
    except OSError:
        return None
