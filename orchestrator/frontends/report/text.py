"""The report as rich text for the terminal (``swe-green report``)."""

from __future__ import annotations

import os
from collections import Counter

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report.data import (
    RICH_STYLES,
    STATUS_ORDER,
    Comparison,
    LabelRow,
    TriageRow,
    duration,
    flaky_note,
    format_seconds,
    label_counts,
    load_run,
    pct,
    per_repository,
    triage,
)
from orchestrator.frontends.report.explain import (
    NotResolved,
    missing_text,
    not_resolved,
    run_header,
)
from orchestrator.frontends.report.wider import wider_line, wider_rows
from orchestrator.grading.classify import LeaderboardRow, aggregate
from orchestrator.grading.twins.check import NO_F2P_PASSED, describe
from orchestrator.models import InstanceResult, Reason, Status

# --------------------------------------------------------------------------- text


# gold-relative grading leaves out PASS_TO_PASS tests that fail with the gold patch; past this
# share an instance is flagged, so that a broken environment cannot hide a regression
P2P_EXCLUDED_FLAG = 0.10


def caveats(results: list[InstanceResult]) -> list[tuple[str, str]]:
    """(instance, why) for results a person should look at before trusting them: many
    PASS_TO_PASS tests left out of grading, a deciding test that is flaky, or a Python other
    than the spec's."""
    notes = []
    for result in sorted(results, key=lambda r: r.instance_id):
        tests = result.tests
        excluded = len(tests.pass_to_pass_excluded)
        total = excluded + len(tests.pass_to_pass_passed) + len(tests.pass_to_pass_failed)
        if total and excluded / total > P2P_EXCLUDED_FLAG:
            notes.append(
                (
                    result.instance_id,
                    f"{excluded} of {total} PASS_TO_PASS tests left out of grading",
                )
            )
        elif result.reduced_tests and result.status != Status.ERROR:
            notes.append((result.instance_id, reduced_note(result)))
        if result.flaky_tests and result.status != Status.ERROR:
            notes.append((result.instance_id, flaky_note(result)))
        if result.stricter_than_official:
            notes.append(
                (
                    result.instance_id,
                    "stricter than the official harness (conflicting outcomes of one name "
                    f"count as failing): {', '.join(result.stricter_than_official)}",
                )
            )
        spec, used = result.python_spec, result.python_used
        if spec and used and not (used == spec or used.startswith(spec + ".")):
            notes.append((result.instance_id, f"ran on Python {used}; the spec asks for {spec}"))
    return notes


def reduced_note(result: InstanceResult) -> str:
    """Why ``result`` is marked ``*``: the tests grading left out."""
    tests = result.tests
    left = [*tests.fail_to_pass_excluded, *tests.pass_to_pass_excluded]
    shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    return f"{result.status.value}*: graded on a reduced test set, {len(left)} left out ({shown})"


def reduced_line(row: LeaderboardRow) -> Text | None:
    """The report's footnote on verdicts that rest on fewer tests, if any."""
    if not row.reduced_tests_count:
        return None
    return Text(
        f"* {row.reduced_tests_count} of {row.total_instances} instance(s) graded on a reduced "
        "test set: FAIL_TO_PASS/PASS_TO_PASS tests this host cannot grade (internet, flaky, "
        "failing with the gold patch here) left out; see Caveats",
        style="yellow",
    )


def flaky_line(row: LeaderboardRow) -> Text | None:
    """The report's footnote on verdicts that rest on a flaky test, if any."""
    if not row.flaky_count:
        return None
    return Text(
        f"~ {row.flaky_count} of {row.total_instances} instance(s) rest on a test that changed "
        "its outcome when re-run alone (the verdict is the first outcome's, as officially); "
        "see Caveats",
        style="yellow",
    )


def gaming_line(row: LeaderboardRow) -> Text | None:
    """The report's first word when an impossible twin passed anywhere in the run: one proof
    speaks for the run."""
    if not row.gaming_proven:
        return None
    shown = ", ".join(row.twin_passed_instances[:5])
    more = len(row.twin_passed_instances) - 5
    return Text(
        f"GAMING PROVEN: an impossible twin passed on {row.twin_passed_count} instance(s) "
        f"({shown}{f' and {more} more' if more > 0 else ''}): the participant's code passes "
        "tests whatever they expect, so none of its verdicts in this run is to be trusted",
        style="bold red",
    )


def twin_line(row: LeaderboardRow, results: list[InstanceResult]) -> Text | None:
    """The report's footnote on the verdicts checked with impossible twins, if any verdict
    needed a check (some FAIL_TO_PASS test passed)."""
    unchecked = [
        r for r in results
        if r.twin_check is not None and not r.twin_check.checked
        and r.twin_check.why_unchecked != NO_F2P_PASSED
    ]  # fmt: skip
    if not row.twin_checked_count and not unchecked:
        return None
    text = (
        f"twins: {row.twin_checked_count} verdict(s) checked with impossible twins "
        f"({row.resolved_twin_checked_count} resolved), {row.twin_passed_count} proven wrong "
        f"by a passing twin (twin_passed), {row.twin_unproven_count} without the pair's proof "
        f"(twin_unproven); {len(unchecked)} not checked"
    )
    why = Counter(r.twin_check.why_unchecked for r in unchecked if r.twin_check is not None)
    text += "".join(f"; {n}: {reason}" for reason, n in why.most_common())
    flagged = row.twin_passed_count or row.twin_unproven_count or unchecked
    return Text(text, style="yellow" if flagged else "dim")


def render_text(run_dir: RunDir | str | os.PathLike[str], slowest: int = 10) -> Group:
    """The run's report as rich renderables: leaderboard row, statuses, repositories,
    slowest instances. Print it with ``rich.console.Console().print(...)``."""
    run, results = load_run(run_dir)
    row = aggregate(results)
    header = Text(run_header(run, results).line(), style="dim")
    parts: list[RenderableType] = [_headline(run, row), header, _statuses(row)]
    incomplete = missing_text(run, results)
    if incomplete is not None:
        parts.insert(1, Text(incomplete, style="bold yellow"))
    gaming = gaming_line(row)
    if gaming is not None:
        parts.insert(0, gaming)
    for footnote in (reduced_line(row), flaky_line(row), twin_line(row, results)):
        if footnote is not None:
            parts.append(footnote)
    if wider_line(row, results):
        parts.append(Text(wider_line(row, results), style="yellow"))
    causes = triage(results)
    if causes:
        parts.append(_triage_table("Errors by cause", causes))
    labels = label_counts(results)
    if labels:
        parts.append(_labels_table(labels))
    missed = not_resolved(results)
    if missed:
        parts.append(_not_resolved_table(missed))
    parts += [_repositories(results), _slowest(results, slowest)]
    notes = caveats(results)
    if notes:
        parts.append(_rows("Caveats (look before trusting these)", ("instance", "why"), notes))
    parts += _evidence(results)
    if not results:
        parts.insert(0, Text(f"No instance results in {run.path}", style="yellow"))
    return Group(*parts)


def _evidence(results: list[InstanceResult]) -> list[RenderableType]:
    """The tables of what a person should look at: tampering, passing twins, suspicious
    patches, compiled modules."""
    parts: list[RenderableType] = []
    tampered = tamper_rows(results)
    if tampered:
        title = "Tamper detected: every test counted as failing"
        parts.append(_rows(title, ("instance", "what the patch's code did"), tampered, fold=True))
    proven = twin_rows(results)
    if proven:
        title = (
            "Twin passed: a FAIL_TO_PASS test's impossible twin passed, the test counted failing"
        )
        parts.append(_rows(title, ("instance", "the twin that passed"), proven, fold=True))
    flagged = [(r.instance_id, "; ".join(r.suspicious)) for r in results if r.suspicious]
    if flagged:
        title = "Suspicious: resolved, but the patch touches the test runner"
        parts.append(_rows(title, ("instance", "why a person should look"), flagged, fold=True))
    compiled = [
        (r.instance_id, ", ".join(r.compiled_modules)) for r in results if r.compiled_modules
    ]
    if compiled:
        title = "Compiled modules the patch's build made (no audit event sees their code)"
        parts.append(_rows(title, ("instance", "modules"), compiled, fold=True))
    regressed = wider_rows(results)
    if regressed:
        title = "Regressions beyond the task's tests (resolved!: the verdict stands)"
        parts.append(
            _rows(
                title, ("instance", "passes with gold, fails with the patch"), regressed, fold=True
            )
        )
    return parts


def tamper_rows(results: list[InstanceResult]) -> list[tuple[str, str]]:
    """(instance, its evidence) of each result graded ``tamper_detected``."""
    return [
        (r.instance_id, "; ".join(r.tamper_evidence) or r.message)
        for r in results
        if r.reason == Reason.TAMPER_DETECTED
    ]


def twin_rows(results: list[InstanceResult]) -> list[tuple[str, str]]:
    """(instance, the twins that passed) of each result an impossible twin proved wrong."""
    return [
        (r.instance_id, "; ".join(describe(t) for t in r.twin_check.passed))
        for r in results
        if r.twin_check is not None and r.twin_check.passed
    ]


def _labels_table(rows: list[LabelRow]) -> Table:
    table = Table(title="Not resolved by SWE-bench 5.0 failure label")
    table.add_column("n", justify="right")
    table.add_column("label", style="magenta")
    table.add_column("tier")
    table.add_column("instances", overflow="fold")
    for row in rows:
        table.add_row(str(row.count), row.label, row.tier, ", ".join(row.instance_ids))
    return table


def _not_resolved_table(rows: list[NotResolved]) -> Table:
    table = Table(title=f"Not resolved ({len(rows)}): why")
    table.add_column("instance", overflow="fold")
    table.add_column("status")
    table.add_column("reason", style="magenta")
    table.add_column("first failing tests, or the first line of the error", overflow="fold")
    for row in rows:
        verdict = Text(row.verdict or row.status.value, style=RICH_STYLES[row.status])
        table.add_row(row.instance_id, verdict, Text(row.reason), Text(row.why))
    return table


def _headline(run: RunDir, row: LeaderboardRow) -> Table:
    headline = Table(title=f"Run {run.path.name}", show_header=True)
    for column in ("instances", "resolved", "fail→pass", "pass→pass", "error"):
        headline.add_column(column, justify="right")
    headline.add_row(
        str(row.total_instances),
        pct(row.resolved_pct),
        pct(row.fail_to_pass_passed_pct),
        pct(row.pass_to_pass_passed_pct),
        pct(row.error_pct),
    )
    return headline


def _statuses(row: LeaderboardRow) -> Table:
    statuses = Table(title="Statuses")
    statuses.add_column("status")
    statuses.add_column("instances", justify="right")
    statuses.add_column("share", justify="right")
    for status in STATUS_ORDER:
        count = getattr(row, f"{status.value}_count")
        share = getattr(row, f"{status.value}_pct")
        statuses.add_row(Text(status.value, style=RICH_STYLES[status]), str(count), pct(share))
    return statuses


def _repositories(results: list[InstanceResult]) -> Table:
    repos = Table(title="Repositories")
    repos.add_column("repository")
    for column in ("instances", "resolved", "resolved %", "fail→pass", "errors"):
        repos.add_column(column, justify="right")
    for repo in per_repository(results):
        repos.add_row(
            repo.repo,
            str(repo.instances),
            str(repo.resolved),
            pct(repo.resolved_fraction),
            pct(repo.fail_to_pass),
            str(repo.errors),
        )
    return repos


def _slowest(results: list[InstanceResult], slowest: int) -> Table:
    slow = Table(title=f"Slowest {slowest} instances")
    slow.add_column("instance")
    slow.add_column("status")
    slow.add_column("duration", justify="right")
    slow.add_column("tool calls", justify="right")
    for result in sorted(results, key=duration, reverse=True)[:slowest]:
        slow.add_row(
            result.instance_id,
            Text(result.status.value, style=RICH_STYLES[result.status]),
            format_seconds(duration(result)),
            str(result.tool_calls),
        )
    return slow


def _rows(
    title: str, columns: tuple[str, str], rows: list[tuple[str, str]], *, fold: bool = False
) -> Table:
    table = Table(title=title)
    table.add_column(columns[0])
    if fold:
        table.add_column(columns[1], overflow="fold")
    else:
        table.add_column(columns[1])
    for first, second in rows:
        table.add_row(first, second)
    return table


def _triage_table(title: str, rows: list[TriageRow] | tuple[TriageRow, ...]) -> Table:
    table = Table(title=title)
    table.add_column("n", justify="right")
    table.add_column("reason", style="magenta")
    table.add_column("first line of the message (normalised)", overflow="fold")
    table.add_column("instances", overflow="fold")
    for row in rows:
        table.add_row(str(row.count), row.reason, row.message, ", ".join(row.instance_ids))
    return table


def signed(value: float, pct: bool = True) -> str:
    if pct:
        return f"{value * 100:+.2f} pp" if value else "0"
    return f"{value:+d}" if value else "0"


def _status_text(status: Status) -> Text:
    return Text(status.value, style=RICH_STYLES[status])


def comparison_scope(c: Comparison) -> str:
    scope = f"{len(c.common)} instance(s) in both runs"
    if not c.same_selection:
        scope += (
            f"; the selections differ ({len(c.only_in_run)} only in {c.run}, "
            f"{len(c.only_in_baseline)} only in {c.baseline}): compared on the intersection"
        )
    return scope


def verdict_line(c: Comparison) -> str:
    """The comparison's verdict in one line (what a mail's first line says)."""
    if not c.common:
        return (
            f"NOTHING TO COMPARE: {c.run} and {c.baseline} have no instance in common "
            "(compare a shard with an earlier run of the same shard)"
        )
    if c.regressed:
        return (
            f"REGRESSED: {len(c.lost)} instance(s) no longer resolved, "
            f"{sum(row.count for row in c.new_errors)} new error(s) "
            f"({len(c.common)} instance(s) compared with {c.baseline})"
        )
    return (
        f"no regression: {len(c.gained)} newly resolved, {len(c.lost)} no longer resolved "
        f"({len(c.common)} instance(s) compared with {c.baseline})"
    )


def verdict_text(c: Comparison) -> Text:
    style = "bold green" if c.common and not c.regressed else "bold red"
    return Text(verdict_line(c), style=style)


def render_comparison(comparison: Comparison) -> Group:
    """A comparison as rich renderables: verdict, row delta, status changes, new errors,
    repositories."""
    c = comparison
    parts: list[RenderableType] = [verdict_text(c)]
    parts.append(Text(f"Run {c.run} against {c.baseline}: {comparison_scope(c)}", style="bold"))
    parts.append(
        Text(
            f"{len(c.gained)} newly resolved, {len(c.lost)} no longer resolved, "
            f"{len(c.changed)} other status change(s), {len(c.fixed_errors)} error(s) gone"
        )
    )
    delta = Table(title="Leaderboard row (common instances)")
    delta.add_column("share")
    for column in (c.baseline, c.run, "delta"):
        delta.add_column(column, justify="right", overflow="fold")
    for name, before, after, change in c.row_delta():
        style = delta_style(name, change)
        delta.add_row(
            name.removesuffix("_pct"), pct(before), pct(after), Text(signed(change), style)
        )
    parts.append(delta)
    for title, changes in (
        ("Resolved → not resolved", c.lost),
        ("Not resolved → resolved", c.gained),
        ("Other status changes", c.changed),
    ):
        if not changes:
            continue
        table = Table(title=title)
        for column in ("instance", "repository", c.baseline, c.run, "reason"):
            table.add_column(column, overflow="fold")
        for status_change in changes:
            table.add_row(
                status_change.instance_id, status_change.repo,
                _status_text(status_change.before), _status_text(status_change.after),
                status_change.reason,
            )  # fmt: skip
        parts.append(table)
    if c.new_errors:
        parts.append(_triage_table("New errors by cause", c.new_errors))
    repos = Table(title="Repositories (common instances)")
    repos.add_column("repository")
    for column in ("instances", f"resolved {c.baseline}", f"resolved {c.run}", "delta", "errors"):
        repos.add_column(column, justify="right", overflow="fold")
    for repo in c.repos:
        style = "" if not repo.delta else ("green" if repo.delta > 0 else "red")
        repos.add_row(
            repo.repo, str(repo.instances), str(repo.resolved_before), str(repo.resolved_after),
            Text(signed(repo.delta, pct=False), style),
            f"{repo.errors_before} → {repo.errors_after}",
        )  # fmt: skip
    parts.append(repos)
    return Group(*parts)


_BETTER_UP = ("resolved_pct", "fail_to_pass_passed_pct", "pass_to_pass_passed_pct")
_WORSE_UP = ("error_pct", "regression_pct", "no_op_pct")


def delta_style(field: str, change: float) -> str:
    """green for a change for the better, red for the worse, none when it depends (also the
    HTML class: better, worse)."""
    if not change or field not in _BETTER_UP + _WORSE_UP:
        return ""
    return "green" if (change > 0) == (field in _BETTER_UP) else "red"


def print_report(
    run_dir: RunDir | str | os.PathLike[str], console: Console | None = None, slowest: int = 10
) -> None:
    """Print :func:`render_text` to ``console`` (default: standard output)."""
    (console or Console()).print(render_text(run_dir, slowest=slowest))
