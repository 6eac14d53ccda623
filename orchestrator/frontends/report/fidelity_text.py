"""The fidelity report (:mod:`.fidelity`) as Markdown (``docs/fidelity.md``) and as lines for
the terminal."""

from __future__ import annotations

from orchestrator.frontends.report.fidelity import Fidelity, InstanceFidelity


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def _official(row: InstanceFidelity) -> str:
    if row.official_resolved is None:
        return "-"
    return "resolved" if row.official_resolved else "unresolved"


def _cause_counts(fidelity: Fidelity) -> list[str]:
    """A table of the causes: verdicts and tests that differ, per cause."""
    verdicts: dict[str, int] = {}
    tests: dict[str, int] = {}
    for row in fidelity.graded_both:
        if not row.verdict_agrees:
            verdicts[row.cause] = verdicts.get(row.cause, 0) + 1
        for d in row.disagreements:
            tests[d.cause] = tests.get(d.cause, 0) + 1
    causes = sorted(set(verdicts) | set(tests))
    if not causes:
        return []
    lines = ["## Differences by cause", "", "| cause | verdicts | tests |", "|---|---|---|"]
    lines += [f"| {c} | {verdicts.get(c, 0)} | {tests.get(c, 0)} |" for c in causes]
    return [*lines, ""]


def render_markdown(fidelity: Fidelity, title: str, preamble: str = "") -> str:
    """The fidelity report as Markdown (``docs/fidelity.md``)."""
    both = fidelity.graded_both
    targets = fidelity.verdict_targets
    agreeing_targets = sum(1 for i in targets if i.verdict_agrees)
    t_agree, t_total = fidelity.agreement_targets
    lines = [
        f"# {title}",
        "",
        *([preamble, ""] if preamble else []),
        "| measure | value |",
        "|---|---|",
        f"| instances (run ∪ official) | {len(fidelity.instances)} |",
        f"| graded by both | {len(both)} |",
        f"| verdict agreement | {fidelity.verdicts_agreeing}/{len(both)} "
        f"({_pct(fidelity.verdicts_agreeing, len(both))}) |",
        f"| verdict agreement without official-environment differences | "
        f"{agreeing_targets}/{len(targets)} ({_pct(agreeing_targets, len(targets))}) |",
        f"| test-level agreement | {fidelity.tests_agreeing}/{fidelity.tests_compared} "
        f"({_pct(fidelity.tests_agreeing, fidelity.tests_compared)}) |",
        f"| test-level agreement without official-environment differences | "
        f"{t_agree}/{t_total} ({_pct(t_agree, t_total)}) |",
        f"| official tests left out here (not compared) | {sum(i.tests_left_out for i in both)} |",
        "",
        *_cause_counts(fidelity),
        "## Verdicts that differ",
        "",
    ]
    lines += _verdicts_differing(both)
    lines += _tests_differing(both)
    lines += _per_instance(fidelity)
    return "\n".join(lines) + "\n"


def _verdicts_differing(both: list[InstanceFidelity]) -> list[str]:
    lines: list[str] = []
    differing = [i for i in both if not i.verdict_agrees]
    if differing:
        lines += ["| instance | ours | official | cause |", "|---|---|---|---|"]
        lines += [
            f"| {i.instance_id} | {i.ours} | {'resolved' if i.official_resolved else 'unresolved'}"
            f" | {i.cause} |"
            for i in differing
        ]
    else:
        lines.append("None.")
    return lines


def _tests_differing(both: list[InstanceFidelity]) -> list[str]:
    lines: list[str] = []
    lines += ["", "## Tests that differ", ""]
    tests = [(i.instance_id, d) for i in both for d in i.disagreements]
    if tests:
        lines += [
            "| instance | test | group | ours | official | cause |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {iid} | `{d.test}` | {d.group} | {d.ours} | {d.official} | {d.cause} |"
            for iid, d in tests
        ]
    else:
        lines.append("None.")
    return lines


def _per_instance(fidelity: Fidelity) -> list[str]:
    """The instances not graded by both, then every instance."""
    lines: list[str] = []
    not_both = [i for i in fidelity.instances if not i.graded_both]
    lines += ["", "## Not graded by both", ""]
    if not_both:
        lines += ["| instance | ours | official | why |", "|---|---|---|---|"]
        lines += [f"| {i.instance_id} | {i.ours} | {_official(i)} | {i.cause} |" for i in not_both]
    else:
        lines.append("None.")
    lines += ["", "## Every instance", ""]
    lines += [
        "| instance | ours | official | tests agreeing | left out here |",
        "|---|---|---|---|---|",
    ]
    for i in fidelity.instances:
        lines.append(
            f"| {i.instance_id} | {i.ours} | {_official(i)} | "
            f"{i.tests_agreeing}/{i.tests_compared} | {i.tests_left_out} |"
        )
    return lines


def summary_lines(fidelity: Fidelity) -> list[str]:
    """The figures, for the terminal."""
    both = fidelity.graded_both
    targets = fidelity.verdict_targets
    agreeing_targets = sum(1 for i in targets if i.verdict_agrees)
    t_agree, t_total = fidelity.agreement_targets
    lines = [
        f"graded by both: {len(both)} of {len(fidelity.instances)} instance(s)",
        f"verdicts agree: {fidelity.verdicts_agreeing}/{len(both)} "
        f"({_pct(fidelity.verdicts_agreeing, len(both))}); without official-environment "
        f"differences {agreeing_targets}/{len(targets)} ({_pct(agreeing_targets, len(targets))})",
        f"tests agree: {fidelity.tests_agreeing}/{fidelity.tests_compared} "
        f"({_pct(fidelity.tests_agreeing, fidelity.tests_compared)}); without "
        f"official-environment differences {t_agree}/{t_total} ({_pct(t_agree, t_total)})",
    ]
    for i in both:
        if not i.verdict_agrees:
            official = "resolved" if i.official_resolved else "unresolved"
            lines.append(f"  {i.instance_id}: ours {i.ours}, official {official}: {i.cause}")
        for d in i.disagreements:
            lines.append(
                f"    {d.group} {d.test}: ours {d.ours}, official {d.official} ({d.cause})"
            )
    return lines
