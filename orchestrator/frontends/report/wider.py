"""What the reports say of the wider runs (the repository's tests beyond the task's, against
the gold patch): a footnote with the counts of the leaderboard row, and per resolved
verdict with regressions the tests by name with their failure's start. The verdict is the
official one, marked ``!``."""

from __future__ import annotations

from collections import Counter

from orchestrator.grading.classify import LeaderboardRow
from orchestrator.models import InstanceResult, Status, WiderCheck


def wider_line(row: LeaderboardRow, results: list[InstanceResult]) -> str:
    """The footnote on the wider runs ("" when none was asked for)."""
    checked = [r.wider for r in results if r.status == Status.RESOLVED and r.wider is not None]
    if not checked:
        return ""
    text = (
        f"! wider tests: of {len(checked)} resolved verdict(s), "
        f"{row.resolved_wider_clean_count} clean beyond the task's tests, "
        f"{row.resolved_wider_regressions_count} with regressions beyond them (resolved!: "
        f"the verdict stays the official one), {row.resolved_wider_not_run_count} not compared"
    )
    why = Counter(_short_why(w) for w in checked if not w.ran)
    return text + "".join(f"; {n}: {reason}" for reason, n in why.most_common())


def _short_why(check: WiderCheck) -> str:
    return check.why_not.split(":", 1)[0] if check.why_not.startswith("no gold") else (
        check.why_not.split(":", 1)[0][:80]
    )  # fmt: skip


def wider_rows(results: list[InstanceResult]) -> list[tuple[str, str]]:
    """(instance, its regressions beyond the task's tests: name, outcomes, first lines of
    the failure) of each resolved verdict with some."""
    return [
        (
            r.instance_id,
            "; ".join(regression_text(t.name, t.patch, t.excerpt) for t in r.wider.regressions),
        )
        for r in results
        if r.wider is not None and r.wider.regressions
    ]


def regression_text(name: str, outcome: str, excerpt: str) -> str:
    """One regression in a line: the test, its outcome with the patch, its failure's start."""
    first = next((line.strip() for line in reversed(excerpt.splitlines()) if line.strip()), "")
    return f"{name} (gold PASSED, patch {outcome}{': ' + first[:160] if first else ''})"


def _names(functions: list[str], shown: int = 5) -> str:
    more = len(functions) - shown
    return ", ".join(functions[:shown]) + (f" and {more} more" if more > 0 else "") or "none read"


def wider_summary(check: WiderCheck) -> str:
    """One instance's wider run in a sentence."""
    if not check.ran:
        return f"not compared: {check.why_not}"
    cut = f", {check.cut} more left out by the cap" if check.cut else ""
    return (
        f"{len(check.files)} test module(s){cut}, {check.compared} test(s) compared with the "
        f"gold patch's two runs, {check.left_out} left out (not passing both times with "
        f"gold), {check.no_baseline} without a gold baseline; {len(check.regressions)} "
        f"regression(s), {len(check.differs)} outcome(s) differing from gold in the "
        f"{check.exercising} test(s) of what it changes ({_names(check.gold_functions)}), "
        f"in {check.seconds:.1f} s"
    )
