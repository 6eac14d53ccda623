"""Tool call overhead: p50/p95 of trivial `bash` tool calls through ``run_tool`` next to bare
``Sandbox.exec`` of the same command, plus a `view` call (the in-container Python program).
Run: python bench/tools.py [--image swe-green/base:py3.11] [--calls 200]
"""

from __future__ import annotations

import argparse
import time
import uuid

from orchestrator.docker_engine import connect
from orchestrator.housekeeping import gc
from orchestrator.sandbox import Sandbox
from orchestrator.tool_protocol import ToolCall
from orchestrator.tools_host import run_tool

COMMAND = "echo hello"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", default="swe-green/base:py3.11")
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    client = connect()
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        sb = Sandbox.start(client, args.image, run_id=run_id, instance_id="bench")
        sb.exec("mkdir -p /testbed && seq 1 200 > /testbed/file.txt")
        bash_call = ToolCall(id="b", name="bash", arguments={"command": COMMAND})
        view_call = ToolCall(id="v", name="view", arguments={"path": "/testbed/file.txt"})
        rows = {
            "bare Sandbox.exec": timed(lambda: sb.exec(COMMAND), args.calls),
            "bash tool (run_tool)": timed(lambda: run_tool(sb, bash_call), args.calls),
            "view tool (run_tool)": timed(lambda: run_tool(sb, view_call), args.calls),
        }
        bare = percentile(rows["bare Sandbox.exec"], 0.5)
        print(f"{args.calls} calls of `{COMMAND}` each")
        for label, times in rows.items():
            p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
            print(
                f"{label:22s} p50 {p50 * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"
                f"   p50 ratio to bare {p50 / bare:4.2f}x"
            )
    finally:
        gc(client, run_id=run_id)


if __name__ == "__main__":
    main()
