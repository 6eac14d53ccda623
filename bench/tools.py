"""Tool call overhead: each sandbox tool against a bare ``docker exec`` of the same work.

Per tool, calls of the tool (``run_tool``, as the green agent makes them) alternate with bare
``Sandbox.exec`` calls doing the same work in the same container (bash: ``echo hello``; view:
``cat -n`` of a 200-line file; edit: a one-line ``sed -i`` against a one-line str_replace;
search: ``grep -rn`` against a search of the same tree); printed: the p50 of each, p95, and
the median of the pairwise ratios (ours / bare), against the 1.2x target.

With ``--a2a``, also the full path: a benchmark participant (an A2A server on 127.0.0.1) asks
for one bash call per turn; the green agent (``run_participant`` + ``sandbox_tool_runner``)
runs it and sends the result back (measured at the participant, once per turn style), and the
A2A share alone (a tool runner that returns at once).

Run: python bench/tools.py [--image swe-green/base:py3.11] [--calls 100] [--a2a]
     [--styles message completed input-required]; ``--smoke``: a few calls, seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from orchestrator.frontends.reference_participants import running
from orchestrator.frontends.reference_participants.base import (
    TURN_STYLES,
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnExecutor,
    TurnStyle,
)
from orchestrator.housekeeping.gc import gc
from orchestrator.models import Instance
from orchestrator.participant.client import ParticipantLimits, run_participant
from orchestrator.participant.serving import CardInfo
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.docker import connect
from orchestrator.settings import EnvironmentConfig
from orchestrator.tools.tool_protocol import ToolCall, ToolResult
from orchestrator.tools.tools_host import (
    ToolRunner,
    install_tools,
    run_tool,
    sandbox_tool_runner,
)
from sandbox_tools.contract import TESTBED

COMMAND = "echo hello"
TARGET_RATIO = 1.2
FILE = f"{TESTBED}/file.txt"


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


def paired(ours: Callable[[], object], bare: Callable[[], object], calls: int):
    """``calls`` timings of ``ours`` and of ``bare``, taken in turn (a change of load on the
    host hits both alike), after one warm-up call of each."""
    ours(), bare()
    rows: tuple[list[float], list[float]] = ([], [])
    for _ in range(calls):
        for row, action in zip(rows, (ours, bare), strict=True):
            started = time.perf_counter()
            action()
            row.append(time.perf_counter() - started)
    return rows


def tool_pairs(sb: Sandbox) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Per tool: (our tool call, a bare exec of the same work)."""

    def tool(name: str, **arguments: Any) -> Callable[[], object]:
        call = ToolCall(id=name, name=name, arguments=arguments)

        def run() -> ToolResult:
            result = run_tool(sb, call)
            if result.error:
                raise RuntimeError(f"the {name} call failed: {result.output}")
            return result

        return run

    def bare(argv: list[str]) -> Callable[[], object]:
        return lambda: sb.exec(argv)

    edits = iter(range(10**9))

    def edit() -> object:  # 200 <-> 201 and back, so that every call finds its text
        n = next(edits) % 2
        return tool("edit", command="str_replace", path=FILE, old_str=f"\n{200 + n}\n",
                    new_str=f"\n{201 - n}\n")()  # fmt: skip

    return {
        "bash": (tool("bash", command=COMMAND), bare(["bash", "-c", COMMAND])),
        "view": (tool("view", path=FILE), bare(["cat", "-n", FILE])),
        "edit": (edit, bare(["sed", "-i", "s/^199$/199/", FILE])),
        "search": (tool("search", pattern="^19"), bare(["grep", "-rn", "^19", TESTBED])),
    }


def report_tools(rows: dict[str, tuple[list[float], list[float]]]) -> None:
    print(f"{'tool':8s} {'bare p50':>9s} {'ours p50':>9s} {'ours p95':>9s}  ours/bare")
    for name, (ours, bare) in rows.items():
        ratio = statistics.median(o / b for o, b in zip(ours, bare, strict=True))
        verdict = "ok" if ratio <= TARGET_RATIO else f"ABOVE the {TARGET_RATIO}x target"
        ms = [statistics.median(bare) * 1000, statistics.median(ours) * 1000]
        ms.append(percentile(ours, 0.95) * 1000)
        print(f"{name:8s} {ms[0]:7.1f}ms {ms[1]:7.1f}ms {ms[2]:7.1f}ms  {ratio:5.2f}x {verdict}")


def report_a2a(runner: ToolRunner, styles: list[str], calls: int) -> None:
    with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
        for style in styles:
            for label, tool_runner in (("full A2A path", runner), ("A2A only, no-op", _no_op)):
                times = full_path(tool_runner, calls, style=style, workdir=Path(tmp))  # type: ignore[arg-type]
                print(
                    f"{label} ({style}): p50 {percentile(times, 0.5) * 1000:6.1f} ms"
                    f"   p95 {percentile(times, 0.95) * 1000:6.1f} ms"
                )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", default=EnvironmentConfig().base_image())
    parser.add_argument("--calls", type=int, default=100, help="timed calls per tool and row")
    parser.add_argument("--a2a", action="store_true", help="the full A2A path too")
    parser.add_argument("--styles", nargs="+", default=list(TURN_STYLES), choices=TURN_STYLES)
    parser.add_argument("--smoke", action="store_true", help="3 calls per row, one A2A style")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.a2a, args.styles = 3, True, args.styles[:1]
    backend = connect()
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        sb = Sandbox.start(backend.client, args.image, run_id=run_id, instance_id="bench")
        install_tools(sb)
        sb.exec(f"mkdir -p {TESTBED} && seq 1 200 > {FILE}")
        rows = {name: paired(*pair, args.calls) for name, pair in tool_pairs(sb).items()}
        print(f"{args.calls} calls per row, ours and bare in turn, in one container")
        report_tools(rows)
        if args.a2a:
            report_a2a(sandbox_tool_runner(sb), args.styles, args.calls)
    finally:
        gc(backend, run_id=run_id)


if __name__ == "__main__":
    main()
