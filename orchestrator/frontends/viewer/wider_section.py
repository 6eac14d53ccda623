"""The instance page's section on the wider run: the repository's tests beyond the task's,
against the gold patch's two runs at validation; each regression with the start of its
failure, the outcomes that differ from gold's in either direction, the modules run and why.
The verdict stays the official one."""

from __future__ import annotations

from orchestrator.frontends.report.wider import wider_summary
from orchestrator.frontends.viewer.parts import esc
from orchestrator.models import InstanceResult, WiderTest

MODULES_SHOWN = 60


def wider_section(result: InstanceResult) -> list[str]:
    """The section (nothing when no wider run was asked for)."""
    check = result.wider
    if check is None:
        return []
    parts = [
        '<h2 id="wider">Beyond the task\'s tests</h2>',
        f'<p id="wider-summary">{esc(wider_summary(check))}</p>',
    ]
    if check.tamper_evidence:
        parts.append(
            "<ul>" + "".join(f"<li>{esc(e)}</li>" for e in check.tamper_evidence) + "</ul>"
        )
    if check.regressions:
        parts.append(f"<h3>Pass with gold, fail with this patch: {len(check.regressions)}</h3>")
        parts += [_item(test, True) for test in check.regressions]
    other = [test for test in check.differs if test not in check.regressions]
    if other:
        parts.append(
            f"<h3>Fail with gold, pass with this patch, in tests of what gold changes: "
            f"{len(other)}</h3>"
        )
        parts += [_item(test, False) for test in other]
    if check.files:
        shown = check.files[:MODULES_SHOWN]
        rows = "".join(
            f"<li>{esc(path)} <span class=muted>({esc(check.scope.get(path, ''))})</span></li>"
            for path in shown
        )
        more = len(check.files) - len(shown)
        rows += f"<li class=muted>and {more} more</li>" if more > 0 else ""
        parts.append(
            f"<details><summary>{len(check.files)} test module(s) run</summary>"
            f"<ul>{rows}</ul></details>"
        )
    return parts


def _item(test: WiderTest, failed: bool) -> str:
    outcome = "failed" if failed else "passed"
    body = f"<pre>{esc(test.excerpt)}</pre>" if test.excerpt else ""
    return (
        f'<details class="test" data-outcome="{outcome}"{" open" * failed}>'
        f'<summary><span class="outcome {outcome}">{esc(test.patch.lower())}</span>'
        f"{esc(test.name)} <span class=muted>(gold: {esc(test.gold.lower())})</span></summary>"
        f"{body}</details>"
    )
