"""Tool call overhead: p50/p95 of trivial `bash` tool calls, from the bottom up.

- bare ``Sandbox.exec`` of the command (one ``docker exec``);
- ``run_tool`` (the bash wrapper: one ``docker exec`` too), and a `view` call (the
  in-container Python program);
- the full path: a benchmark participant (an A2A server on 127.0.0.1) asks for one bash call
  per turn; the green agent (``run_participant`` + ``sandbox_tool_runner``) runs it in the
  container and sends the result back. Measured at the participant: from the end of its
  ``execute`` that returned the tool call to the start of the ``execute`` that brings the
  result. Once per turn style (message, completed task, input-required task);
- the A2A and green-agent share alone: the same with a tool runner that returns at once.

Samples are taken in alternating rounds (load on the host changes during a run).

Run: python bench/tools.py [--image swe-green/base:py3.11] [--calls 200] [--rounds 4]
     [--styles message completed input-required]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from orchestrator.housekeeping import gc
from orchestrator.models import Instance
from orchestrator.participant.client import (
    ParticipantLimits,
    ToolRunner,
    run_participant,
    sandbox_tool_runner,
)
from orchestrator.participant.reference import running
from orchestrator.participant.reference.base import (
    TURN_STYLES,
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnExecutor,
    TurnStyle,
)
from orchestrator.participant.serving import CardInfo
from orchestrator.participant.tool_protocol import ToolCall, ToolResult
from orchestrator.participant.tools_host import install_tools, run_tool
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.docker import connect

COMMAND = "echo hello"
TARGET_RATIO = 1.5


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(action, calls: int) -> list[float]:
    action()  # warm up (and install what needs installing)
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


class EchoParticipant(ReferenceParticipant):
    """Asks for ``calls`` bash calls of ``COMMAND``, one per turn, then answers "done"."""

    def __init__(self, calls: int, turn_style: TurnStyle) -> None:
        super().__init__()
        self.calls = calls
        self.turn_style = turn_style
        self.info = CardInfo(name="bench-echo", description="Benchmark: one bash call per turn.")
        self.returned_at: float | None = None
        self.round_trips: list[float] = []

    def new_state(self) -> dict[str, Any]:
        return {"sent": 0}

    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply:
        if state["sent"] >= self.calls:
            return Reply.answer("done")
        state["sent"] += 1
        call_id = f"c{state['sent']}"
        return Reply.calls([ToolCall(id=call_id, name="bash", arguments={"command": COMMAND})])

    def executor(self) -> TurnExecutor:
        return _TimingExecutor(self)


class _TimingExecutor(TurnExecutor):
    participant: EchoParticipant

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        arrived = time.perf_counter()
        if self.participant.returned_at is not None:
            self.participant.round_trips.append(arrived - self.participant.returned_at)
        await super().execute(context, event_queue)
        self.participant.returned_at = time.perf_counter()


def full_path(runner: ToolRunner, calls: int, *, style: TurnStyle, workdir: Path) -> list[float]:
    """Round trips of ``calls`` bash calls: participant -> A2A -> green -> ``runner`` -> back."""
    participant = EchoParticipant(calls + 1, style)  # the first round trip is a warm-up
    instance = Instance(
        instance_id="bench__echo-1", repo="bench/echo", base_commit="0" * 40,
        environment_setup_commit="0" * 40, problem_statement="Benchmark: run echo.",
    )  # fmt: skip
    limits = ParticipantLimits(max_tool_calls=calls + 10)
    with running(participant) as url:
        outcome = asyncio.run(
            run_participant(
                url, instance, runner, limits, workdir / f"transcript-{uuid.uuid4().hex}.jsonl"
            )
        )  # fmt: skip
    if not outcome.ok or outcome.final_text != "done":
        raise RuntimeError(f"the benchmark participant did not finish: {outcome}")
    return participant.round_trips[1:]


def _no_op(call: ToolCall, timeout: float) -> ToolResult:
    """A tool runner that does not touch the container: the A2A and green-agent share."""
    return ToolResult(id=call.id, output="hello\n", exit_code=0)


def interleaved(
    measures: dict[str, Callable[[int], list[float]]], calls: int, rounds: int
) -> dict[str, list[float]]:
    """``calls`` samples of each measure, taken in ``rounds`` alternating blocks, so that a
    change of load on the host during the run hits every measure alike."""
    rows: dict[str, list[float]] = {label: [] for label in measures}
    per_round = max(1, calls // rounds)
    for _ in range(rounds):
        for label, measure in measures.items():
            rows[label] += measure(per_round)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", default="swe-green/base:py3.11")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4, help="alternating blocks per measure")
    parser.add_argument("--styles", nargs="+", default=list(TURN_STYLES), choices=TURN_STYLES)
    args = parser.parse_args()
    backend = connect()
    client = backend.client
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        sb = Sandbox.start(client, args.image, run_id=run_id, instance_id="bench")
        install_tools(sb)
        sb.exec("mkdir -p /testbed && seq 1 200 > /testbed/file.txt")
        bash_call = ToolCall(id="b", name="bash", arguments={"command": COMMAND})
        view_call = ToolCall(id="v", name="view", arguments={"path": "/testbed/file.txt"})
        runner = sandbox_tool_runner(sb)
        with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
            measures: dict[str, Callable[[int], list[float]]] = {
                "bare docker exec": lambda n: timed(lambda: sb.exec(COMMAND), n),
                "bash tool (run_tool)": lambda n: timed(lambda: run_tool(sb, bash_call), n),
                "view tool (run_tool)": lambda n: timed(lambda: run_tool(sb, view_call), n),
            }
            for style in args.styles:
                measures[f"full A2A path ({style})"] = partial(
                    full_path, runner, style=style, workdir=Path(tmp)
                )
            for style in args.styles:
                measures[f"A2A only, no-op runner ({style})"] = partial(
                    full_path, _no_op, style=style, workdir=Path(tmp)
                )
            rows = interleaved(measures, args.calls, args.rounds)
        bare = percentile(rows["bare docker exec"], 0.5)
        print(
            f"`{COMMAND}`: {len(rows['bare docker exec'])} calls per row, "
            f"in {args.rounds} alternating rounds"
        )
        width = max(len(label) for label in rows)
        for label, times in rows.items():
            p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
            print(
                f"{label:{width}s}  p50 {p50 * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"
                f"   p50 / bare {p50 / bare:4.2f}x"
            )
        full = {k: v for k, v in rows.items() if k.startswith("full A2A")}
        if full:
            best = min(full, key=lambda k: percentile(full[k], 0.5))
            ratio = percentile(full[best], 0.5) / bare
            verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
            print(
                f"best: {best}, full/bare p50 = {ratio:.2f}x ({verdict} the {TARGET_RATIO}x target)"
            )
    finally:
        gc(backend, run_id=run_id)


if __name__ == "__main__":
    main()
