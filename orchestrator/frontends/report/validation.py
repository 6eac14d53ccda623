"""``docs/validation.md``: the Markdown report of a validation sweep, from its records (pure)."""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable

from orchestrator.frontends.report.text import P2P_EXCLUDED_FLAG
from orchestrator.validation.sweep import ROOT_CAUSES, SweepRecord


def validation_markdown(
    records: list[SweepRecord],
    title: str,
    command: str,
    selection_total: int | None = None,
    notes: str | None = None,
) -> str:
    """``docs/validation.md`` from a sweep's records (pure); ``notes``, a hand-written
    Markdown analysis kept in its own file, goes at the end, so regenerating keeps it."""
    lines = _summary(records, title, command, selection_total)
    lines += _causes(records)
    lines += twin_coverage(records)
    lines += _times_per_repository(records)
    lines += _per_version(records)
    lines += _instance_lists(records)
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def _flagged(ok: list[SweepRecord]) -> list[SweepRecord]:
    """Validated instances that leave out too many PASS_TO_PASS tests."""
    return [r for r in ok if r.p2p_excluded_share > P2P_EXCLUDED_FLAG]


def _summary(
    records: list[SweepRecord], title: str, command: str, selection_total: int | None
) -> list[str]:
    ok = [r for r in records if r.ok]
    snapshot = [r for r in records if r.cause == "snapshot lacks an object"]
    complete = len(records) - len(snapshot)
    share = 100 * len(ok) / complete if complete else 0.0
    flagged = _flagged(ok)
    offline = [r for r in ok if r.excluded_f2p]
    return [
        f"# {title}",
        "",
        f"**{len(ok)} of {len(records)} instances validate** "
        f"({share:.1f} % of the {complete} whose repository snapshot is complete); "
        f"{len(records) - len(ok)} do not, each with its root cause below. "
        + (f"{selection_total - len(records)} of the selection were not swept. "
           if selection_total and selection_total > len(records) else "")
        + f"{len(flagged)} validated instance(s) leave out more than "
        f"{P2P_EXCLUDED_FLAG:.0%} of their PASS_TO_PASS tests (flagged); "
        f"{len(offline)} leave out FAIL_TO_PASS tests that need the internet (listed below).",
        "",
        "Validation = the environment is built from the recipe (phases 1-4, network on for "
        "set-up only), then with the network off the FAIL_TO_PASS tests fail at the base "
        "commit and pass with the gold patch. PASS_TO_PASS tests that fail with the gold "
        "patch, or whose outcome differs between gold runs (flaky), are left out of grading; "
        "so are FAIL_TO_PASS tests whose failure with the gold patch is the internet being "
        "out of reach, when the instance keeps other FAIL_TO_PASS tests.",
        "",
        f"Regenerate: `{command}`",
    ]  # fmt: skip


def _gap_reason(gap: str) -> str:
    """A twin gap's reason without the twin it names (``... (path:line: mutated)``)."""
    return re.sub(r" \([^()]*:\d+: .*\)$", "", gap)


def twin_coverage(records: list[SweepRecord]) -> list[str]:
    """Per repository, of the validated instances: how many have at least one effective
    impossible twin, and why the others' FAIL_TO_PASS tests have none (the most common).
    Records of a validation that did not look for twins are left out."""
    ok = [r for r in records if r.ok and (r.twins or r.twin_gaps)]
    if not ok:
        return []
    lines = [
        "", "## Impossible twins", "",
        "A validated instance's verdicts are twin-checked when validation kept at least one "
        "effective twin (a FAIL_TO_PASS test with an expected value changed, which the gold "
        "patch fails twice, by the changed assertion).", "",
        "| repository | validated | with a twin | share | why the others have none |",
        "|---|---:|---:|---:|---|",
    ]  # fmt: skip
    by_repo: dict[str, list[SweepRecord]] = defaultdict(list)
    for record in ok:
        by_repo[record.repo].append(record)
    for repo, rows in sorted(by_repo.items()):
        twinned = [r for r in rows if r.twins]
        reasons = Counter(
            _gap_reason(gap) for r in rows if not r.twins for gap in set(r.twin_gaps.values())
        )
        why = "; ".join(f"{reason} ({n})" for reason, n in reasons.most_common(3)) or "–"
        share = 100 * len(twinned) / len(rows)
        lines.append(f"| {repo} | {len(rows)} | {len(twinned)} | {share:.0f} % | {why} |")
    return lines


def _causes(records: list[SweepRecord]) -> list[str]:
    """The failures by root cause, the largest first, with whose problem each is."""
    lines = [
        "",
        "## Failures by root cause",
        "",
        "| root cause | instances | whose problem, and the fix |",
        "|---|---|---|",
    ]
    by_cause: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        if not r.ok:
            by_cause[r.cause or "other"].append(r)
    fixes = {category: fix for category, _, fix in ROOT_CAUSES}
    for cause, items in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
        ids = ", ".join(r.instance_id for r in items[:8]) + (" …" if len(items) > 8 else "")
        lines.append(f"| {cause} | {len(items)}: {ids} | {fixes.get(cause, 'see the message')} |")
    if not by_cause:
        lines.append("| – | 0 | |")
    return lines


def _times_per_repository(records: list[SweepRecord]) -> list[str]:
    lines = [
        "",
        "## Time per repository (seconds, median / max)",
        "",
        "| repository | instances | cold set-up | phase 4 | validation | cache hit (set-up) |",
        "|---|---|---|---|---|---|",
    ]
    by_repo: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        by_repo[r.repo].append(r)
    for repo, items in sorted(by_repo.items()):
        cold = [r.timings["setup"] for r in items if "setup" in r.timings and not r.env_cache_hit]
        hit = [r.timings["setup"] for r in items if "setup" in r.timings and r.env_cache_hit]
        phase4 = [r.timings["base_commit"] for r in items if "base_commit" in r.timings]
        val = [r.timings["validation"] for r in items if "validation" in r.timings]
        lines.append(
            f"| {repo} | {len(items)} | {_fmt_stats(cold)} | {_fmt_stats(phase4)} | "
            f"{_fmt_stats(val)} | {_fmt_stats(hit)} |"
        )
    return lines


def _per_version(records: list[SweepRecord]) -> list[str]:
    lines = [
        "",
        "## Per (repository, version)",
        "",
        "| repository | version | Python spec → used | instances | validated | P2P left out "
        "| errors |",
        "|---|---|---|---|---|---|---|",
    ]
    by_pair: dict[tuple[str, str], list[SweepRecord]] = defaultdict(list)
    for r in records:
        by_pair[(r.repo, r.version)].append(r)
    for (repo, version), items in sorted(
        by_pair.items(), key=lambda kv: (kv[0][0], _version_key(kv[0][1]))
    ):
        pythons = Counter(f"{r.python_spec} → {r.python_used or '?'}" for r in items)
        left_out = sum(len(r.excluded_p2p) for r in items if r.ok)
        errors = Counter(r.cause for r in items if not r.ok)
        lines.append(
            f"| {repo} | {version} | {', '.join(pythons)} | {len(items)} | "
            f"{sum(r.ok for r in items)} | {left_out} | "
            f"{', '.join(f'{n} × {c}' for c, n in errors.items()) or '–'} |"
        )
    return lines


def _instance_lists(records: list[SweepRecord]) -> list[str]:
    """The instances that do not validate, then the tests left out or useless per instance."""
    ok = [r for r in records if r.ok]
    lines = ["", "## Instances that do not validate", ""]
    for r in sorted((r for r in records if not r.ok), key=lambda r: r.instance_id):
        where = f"at {r.stage}" + (f", step {r.failed_step}" if r.failed_step else "")
        made = f", environment by {r.setup_strategy}" if r.setup_strategy else ""
        lines.append(f"- `{r.instance_id}` ({r.cause}, {where}{made}): {_one_line(r.message)}")
    at_base = [r for r in ok if r.f2p_at_base]
    if at_base:
        lines += ["", "## FAIL_TO_PASS tests that already pass at the base", "",
                  "Valid (other FAIL_TO_PASS tests fail at the base and pass with the gold "
                  "patch), but these tests cannot tell a fix from none here:", ""]  # fmt: skip
        for r in sorted(at_base, key=lambda r: r.instance_id):
            lines.append(f"- `{r.instance_id}`: {', '.join(f'`{n}`' for n in r.f2p_at_base)}")
    offline = [r for r in ok if r.excluded_f2p]
    if offline:
        lines += ["", "## FAIL_TO_PASS tests left out: they need the internet", "",
                  "Their failure with the gold patch is a name that does not resolve or a "
                  "network out of reach (they call a public service); the instance is graded "
                  "on its other FAIL_TO_PASS tests:", ""]  # fmt: skip
        for r in sorted(offline, key=lambda r: r.instance_id):
            lines.append(f"- `{r.instance_id}`: {', '.join(f'`{n}`' for n in r.excluded_f2p)}")
    return lines + _p2p_left_out(ok)


def _p2p_left_out(ok: list[SweepRecord]) -> list[str]:
    flagged = _flagged(ok)
    lines = ["", "## PASS_TO_PASS tests left out of grading", ""]
    for r in sorted(ok, key=lambda r: r.instance_id):
        if r.excluded_p2p:
            flag = " **flagged**" if r in flagged else ""
            flaky = f"; flaky: {', '.join(r.flaky)}" if r.flaky else ""
            names = ", ".join(f"`{n}`" for n in r.excluded_p2p[:10])
            more = f" and {len(r.excluded_p2p) - 10} more" if len(r.excluded_p2p) > 10 else ""
            lines.append(
                f"- `{r.instance_id}`: {len(r.excluded_p2p)} of {r.p2p_total}{flag}: "
                f"{names}{more}{flaky}"
            )
    return lines


def _fmt_stats(values: Iterable[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    return f"{statistics.median(values):.0f} / {max(values):.0f}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300].replace("|", "\\|")
