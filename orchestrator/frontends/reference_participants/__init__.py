"""Reference participants for the swe-sandbox protocol, each an A2A server: programs that
talk to the green agent over A2A, as a participant's agent does (not part of phase 5).

- ``gold``: answers with the instance's gold patch (from the dataset);
- ``empty``: answers "no change";
- ``scripted``: replays a JSON script of tool calls, then a final answer (for tests);
- ``claude``: a coding agent on the Anthropic API that uses the tools.

:func:`make_participant` builds one by kind; :func:`running` serves one in a thread of this
process and yields its URL (tests, ``swe-green run``); ``swe-green participant <kind>``
(:mod:`orchestrator.frontends.cli.commands_participant`) serves one until interrupted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.dataset.instances import DEFAULT_SPLIT
from orchestrator.errors import UserError
from orchestrator.frontends.reference_participants.base import (
    TURN_STYLES,
    ReferenceParticipant,
    TurnStyle,
)
from orchestrator.participant.serving import serve_in_thread

KINDS = ("gold", "empty", "scripted", "claude")


def make_participant(
    kind: str,
    *,
    dataset: str | None = None,
    split: str = DEFAULT_SPLIT,
    script: Path | None = None,
    turn_style: TurnStyle | None = None,
    **claude_options: Any,
) -> ReferenceParticipant:
    """A reference participant of ``kind``; a UserError for a bad kind or missing option."""
    if turn_style is not None and turn_style not in TURN_STYLES:
        raise UserError(f"Unknown turn style {turn_style!r}.", f"use one of {TURN_STYLES}.")
    if kind == "gold":
        from orchestrator.frontends.reference_participants.gold import GoldParticipant

        if not dataset:
            raise UserError("The gold participant needs a dataset.", "pass --dataset PATH.")
        return GoldParticipant(dataset, split, turn_style=turn_style or "message")
    if kind == "empty":
        from orchestrator.frontends.reference_participants.empty import EmptyParticipant

        return EmptyParticipant(turn_style=turn_style or "message")
    if kind == "scripted":
        from orchestrator.frontends.reference_participants.scripted import (
            Script,
            ScriptedParticipant,
        )

        if script is None:
            raise UserError("The scripted participant needs a script.", "pass --script FILE.")
        try:
            loaded = Script.load(script)
        except (OSError, ValueError) as exc:
            raise UserError(f"Cannot read the script {script}: {exc}", "fix the file.") from exc
        return ScriptedParticipant(loaded, turn_style=turn_style)
    if kind == "claude":
        from orchestrator.frontends.reference_participants.claude import ClaudeParticipant

        return ClaudeParticipant(turn_style=turn_style or "message", **claude_options)
    raise UserError(f"Unknown participant kind {kind!r}.", f"use one of {', '.join(KINDS)}.")


@contextlib.contextmanager
def running(
    participant: ReferenceParticipant, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Serve ``participant`` in a background thread; yields its URL until the block ends."""
    with serve_in_thread(participant.executor(), participant.info, host=host, port=port) as url:
        yield url


__all__ = ["KINDS", "ReferenceParticipant", "make_participant", "running"]
