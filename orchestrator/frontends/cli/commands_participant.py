"""``swe-green participant <kind>``: serve a reference participant over A2A until
interrupted (:mod:`.app` registers them)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.setting_help import option_help

Host = Annotated[str, typer.Option("--host", help="Interface to listen on.")]
Port = Annotated[int, typer.Option("--port", help="Port to listen on.")]
CardUrl = Annotated[
    str | None,
    typer.Option("--card-url", help="URL the agent card advertises (default host:port)."),
]
Style = Annotated[
    str,
    typer.Option(
        "--turn-style",
        help="How turns end: message (plain messages), completed (a completed task per turn) "
        "or input-required (one task, input-required between turns).",
    ),
]


def _serve(kind: str, host: str, port: int, card_url: str | None, **options: object) -> None:
    from orchestrator.frontends.reference_participants import make_participant
    from orchestrator.participant.serving import serve

    try:
        participant = make_participant(kind, **options)  # type: ignore[arg-type]
        where = card_url or f"http://{host}:{port}/"
        serve(
            participant.executor(), participant.info, host=host, port=port, card_url=card_url,
            listening=lambda: typer.echo(f"{participant.info.name} listening on {where}"),
        )  # fmt: skip
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def gold(
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            envvar="SWE_GREEN_DATASET",
            help="Dataset name, file or directory (default: $SWE_GREEN_DATASET).",
        ),
    ],
    split: Annotated[
        str,
        typer.Option(
            "--split",
            envvar="SWE_GREEN_DATASET_SPLIT",
            help=option_help("dataset_split", "Dataset split"),
        ),
    ] = "test",
    host: Host = "127.0.0.1",
    port: Port = 9019,
    card_url: CardUrl = None,
    turn_style: Style = "message",
) -> None:
    """Answer every instance with its gold patch."""
    _serve("gold", host, port, card_url, dataset=dataset, split=split, turn_style=turn_style)


def empty(
    host: Host = "127.0.0.1",
    port: Port = 9019,
    card_url: CardUrl = None,
    turn_style: Style = "message",
) -> None:
    """Answer every instance with "no change"."""
    _serve("empty", host, port, card_url, turn_style=turn_style)


def scripted(
    script: Annotated[Path, typer.Option("--script", help="JSON script of tool calls.")],
    host: Host = "127.0.0.1",
    port: Port = 9019,
    card_url: CardUrl = None,
    turn_style: Annotated[
        str | None, typer.Option("--turn-style", help="Override the script's turn style.")
    ] = None,
) -> None:
    """Replay a script of tool calls, then answer (for tests)."""
    _serve("scripted", host, port, card_url, script=script, turn_style=turn_style)


def claude(
    model: Annotated[str, typer.Option("--model", help="Anthropic model.")] = "claude-sonnet-4-6",
    api_key: Annotated[
        str | None, typer.Option("--api-key", envvar="ANTHROPIC_API_KEY", show_default=False)
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="ANTHROPIC_BASE_URL", help="API base URL.")
    ] = None,
    max_turns: Annotated[int, typer.Option("--max-turns", help="Model calls per instance.")] = 100,
    host: Host = "127.0.0.1",
    port: Port = 9019,
    card_url: CardUrl = None,
    turn_style: Style = "message",
) -> None:
    """A coding agent on the Anthropic API using the sandbox tools."""
    _serve(
        "claude",
        host,
        port,
        card_url,
        turn_style=turn_style,
        model=model,
        api_key=api_key,
        base_url=base_url,
        max_turns=max_turns,
    )
