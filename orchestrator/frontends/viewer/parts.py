"""Fragments every page of the run viewer shares: the page frame, links between pages and to
raw files, status badges, the one-sentence verdict of an instance."""

from __future__ import annotations

from urllib.parse import quote

from orchestrator.frontends.report.data import STATUS_COLOURS
from orchestrator.frontends.report.explain import why
from orchestrator.frontends.report.html import esc
from orchestrator.models import InstanceResult, Reason, Status

VIEWER_DIR = "viewer"  # the viewer's directory in the run directory
INSTANCE_PAGES = "i"  # its per-instance pages: viewer/i/<instance_id>.html
STYLE_FILE = "viewer.css"

__all__ = ["esc"]


def status_badge(status: Status) -> str:
    """The status as a coloured badge that may break after its underscores (narrow cells)."""
    label = esc(status.value).replace("_", "_<wbr>")
    return f'<span class="status" style="background:{STATUS_COLOURS[status]}">{label}</span>'


def instance_href(instance_id: str, depth: int) -> str:
    """The instance's page, from a page ``depth`` directories below ``viewer/``."""
    return "../" * depth + f"{INSTANCE_PAGES}/{quote(instance_id)}.html"


def raw_href(instance_id: str, name: str, depth: int) -> str:
    """A file of the instance's run directory, from a page ``depth`` below ``viewer/``."""
    up = "../" * (depth + 1)
    return f"{up}instances/{quote(instance_id)}/{quote(name)}"


def instance_link(instance_id: str, depth: int, local: set[str]) -> str:
    if instance_id not in local:
        return esc(instance_id)
    return f'<a href="{esc(instance_href(instance_id, depth))}">{esc(instance_id)}</a>'


def page(title: str, body: list[str], depth: int, script: str = "") -> str:
    """A whole page: ``body`` in the viewer's frame (its style sheet, a viewport for phones)."""
    style = "../" * depth + STYLE_FILE
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<title>{esc(title)}</title><link rel="stylesheet" href="{esc(style)}">',
            "</head><body>",
            *body,
            f"<script>{script}</script>" if script else "",
            "</body></html>",
        ]
    )


def sentence(result: InstanceResult) -> str:
    """The instance's status and why, in one sentence."""
    tests = result.tests
    f2p = len(tests.fail_to_pass_passed) + len(tests.fail_to_pass_failed)
    p2p = len(tests.pass_to_pass_passed) + len(tests.pass_to_pass_failed)
    if result.status == Status.RESOLVED:
        return (
            f"Resolved: all {f2p} FAIL_TO_PASS test(s) pass and none of the {p2p} "
            "PASS_TO_PASS test(s) broke."
        )
    if result.status == Status.ERROR:
        return f"Error ({result.reason.value or 'unknown'}): {why(result)}."
    if result.reason == Reason.TAMPER_DETECTED:
        return f"Tamper detected, every test counted as failing: {why(result)}."
    if result.reason == Reason.TWIN_PASSED:
        return f"Impossible twin passed, its FAIL_TO_PASS test counted as failing: {why(result)}."
    if result.reason == Reason.TWIN_UNPROVEN:
        return (
            "No proof from the secret pair, its FAIL_TO_PASS test counted as failing: "
            f"{why(result)}."
        )
    if result.reason == Reason.EMPTY_PATCH:
        return "No change: the participant's patch is empty, so no test could pass."
    label = result.status.value.replace("_", " ").capitalize()
    return f"{label}: {why(result)}."
