"""``swe-green assess``: the client of ``swe-green serve`` (see :mod:`.assess_client`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.frontends.cli.common import console, err_console


def assess_cmd(
    server: Annotated[
        str, typer.Argument(help="The green agent's URL, e.g. http://127.0.0.1:9009/.")
    ],
    participant: Annotated[str, typer.Option(help="The participant's A2A URL.")],
    config: Annotated[
        str | None,
        typer.Option(
            help="The request's config as a JSON object, e.g. '{\"count\": 3}' or "
            '\'{"instance_ids": ["demo__calc-1"]}\'.'
        ),
    ] = None,
    role: Annotated[str, typer.Option(help="The participant's role in the request.")] = "agent",
    output: Annotated[
        Path | None,
        typer.Option(help="Write the result's data (leaderboard row, per-instance results) here."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token of the server (default: the serve_token setting, "
            "SWE_GREEN_SERVE_TOKEN).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Send an assessment to a running `swe-green serve`, stream its progress, print the result.

    Exit status: 0 completed, 2 rejected (the request is at fault), 3 failed or canceled (the
    green agent could not evaluate, was stopped, or went away; the reason says what to fix),
    130 interrupted.
    """
    from orchestrator.atomic import atomic_write_text
    from orchestrator.frontends.cli.assess_client import (
        EXIT_FAILED,
        ServerWentAway,
        Update,
        build_request,
        run_assessment,
    )
    from orchestrator.settings import load_settings

    request = build_request(participant, role, config)
    token = token or load_settings().serve.serve_token

    def show(update: Update) -> None:
        if update.artifact or not update.text:
            return
        state = update.state.removeprefix("TASK_STATE_").lower()
        console.print(f"[cyan]{state}[/] {update.text}", highlight=False, soft_wrap=True)

    try:
        outcome = run_assessment(server, request, token, show)
    except ServerWentAway as exc:
        err_console.print(f"[bold red]failed:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_FAILED) from None
    state = outcome.state.removeprefix("TASK_STATE_").lower()
    if outcome.artifact_text:
        console.print(outcome.artifact_text, highlight=False, soft_wrap=True)
    if output is not None and outcome.artifact_data is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(output, json.dumps(outcome.artifact_data, indent=2) + "\n")
        console.print(f"result data: {output}")
    if outcome.exit_code:
        reason = outcome.message or outcome.artifact_text
        err_console.print(f"[bold red]{state}:[/] {reason}", highlight=False, soft_wrap=True)
    else:
        console.print(f"task {outcome.task_id}: {state}")
    raise typer.Exit(outcome.exit_code)
