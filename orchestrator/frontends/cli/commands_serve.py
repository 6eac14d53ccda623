"""``swe-green serve``: the green agent's options, handed to
:func:`orchestrator.frontends.server.green_agent.serve` (:mod:`.app` registers it)."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.frontends.cli.setting_help import option_help, setting_choices
from orchestrator.frontends.server.defaults import DEFAULT_HEARTBEAT, DEFAULT_HOST, DEFAULT_PORT

_Insecure = Annotated[
    bool,
    typer.Option(
        "--insecure",
        help="Listen on a non-loopback address without --token or an allow-list "
        "(setting serve_insecure).",
    ),
]
_AllowRequester = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-requester",
        help="Let a request's config ask for more than this server's settings for this key "
        "(repeat; e.g. setup_strategy, which may call the paid LLM API; setting "
        "serve_allowed_overrides).",
    ),
]
_KEEP = f"Which participant containers stay: {setting_choices('serve_keep_containers')}"


def serve_command(
    host: Annotated[
        str,
        typer.Option(help="Address to listen on (0.0.0.0 for every interface, as in a container)."),
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = DEFAULT_PORT,
    card_url: Annotated[
        str | None,
        typer.Option(help="URL the agent card advertises (default: http://<host>:<port>/)."),
    ] = None,
    heartbeat: Annotated[
        float,
        typer.Option(min=1.0, help="Seconds between progress heartbeats while instances run."),
    ] = DEFAULT_HEARTBEAT,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Require 'Authorization: Bearer TOKEN' on A2A calls (setting serve_token).",
            show_default=False,
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-participant-host",
            help="Allow only participants on this host (glob; repeat; setting "
            "serve_allowed_hosts).",
        ),
    ] = None,
    insecure: _Insecure = False,
    allow_requester: _AllowRequester = None,
    keep_containers: Annotated[
        str | None,
        typer.Option(help=option_help("serve_keep_containers", _KEEP)),
    ] = None,
    max_kept: Annotated[
        int | None,
        typer.Option(
            "--max-kept-containers",
            min=0,
            help=option_help("serve_max_kept_containers", "Kept containers of assessments at most"),
        ),
    ] = None,
) -> None:
    """Serve the green agent over A2A (JSON-RPC, A2A 1.0 and 0.3) for assessment requests."""
    from orchestrator.frontends.server.green_agent import serve
    from orchestrator.settings import load_settings

    settings = load_settings(
        serve_token=token,
        serve_allowed_hosts=",".join(allow_host) if allow_host else None,
        serve_insecure=True if insecure else None,
        serve_allowed_overrides=",".join(allow_requester) if allow_requester else None,
        serve_keep_containers=keep_containers,
        serve_max_kept_containers=max_kept,
    )
    serve(host, port, card_url, settings=settings, heartbeat=heartbeat)
