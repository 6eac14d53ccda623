"""Serve under faults: ``kill -9`` and SIGTERM of ``swe-green serve`` mid-assessment, and
``tasks/cancel``; what each leaves running, and whether the next start reaps it.

Usage: ``python bench/serve_faults.py [--kills 5] [--terms 5] [--cancels 3]
[--image swe-green/base:py3.11]``; ``--smoke``: one of each.

On the synthetic instances, with their own image prefix, data directory and runs directory
(nothing of another user's is counted or touched). A participant that answers only after ten
minutes keeps each assessment's instance container running (``sleep infinity``) while it
"works". Per fault, one ``serve`` process on 127.0.0.1 gets one assessment through
``swe-green assess``; once the participant has the task, the serve process gets SIGKILL or
SIGTERM. Counted then, and again once the next ``serve`` answers (it reaps at its start):
the running containers of the assessments' runs, the lease files in the data directory and
the lease volumes on the engine (goal: 0 after the next start; after SIGTERM, 0 already).
Also: how long a SIGTERM takes to end serve, the exit statuses of ``assess`` (3: the green
agent went away or canceled), how many ``tasks/cancel`` end ``canceled``, and whether an
assessment after all that completes (the gold participant: resolved).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docker  # noqa: E402
import httpx  # noqa: E402

from orchestrator.dataset.synthetic import build_synthetic  # noqa: E402
from orchestrator.frontends.reference_participants import make_participant, running  # noqa: E402
from orchestrator.frontends.reference_participants.scripted import (  # noqa: E402
    FinalAnswer,
    Script,
    ScriptedParticipant,
)
from orchestrator.housekeeping.engine_leases import LABEL_LEASE  # noqa: E402
from orchestrator.leases import LEASES_DIR  # noqa: E402
from orchestrator.sandbox.models import LABEL_RUN  # noqa: E402

INSTANCE = "demo__units-1"
CLI = [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()"]
STOP_TIMEOUT = 120  # serve_stop_timeout
REAPED = re.compile(r"runs=\[([^\]]*)\]")


@dataclass
class Left:
    """What runs of this bench are left with: running containers, lease files, lease volumes."""

    containers: int
    lease_files: int
    lease_volumes: int

    def total(self) -> int:
        return self.containers + self.lease_files + self.lease_volumes


@dataclass
class Bench:
    env: dict[str, str]
    runs_dir: Path
    data_dir: Path
    client: docker.DockerClient
    log: Path
    serve: subprocess.Popen[str] | None = None
    url: str = ""
    results: dict[str, list] = field(default_factory=dict)

    # ------------------------------------------------------------------ serve
    def start_serve(self) -> None:
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}/"
        with self.log.open("a") as out:
            self.serve = subprocess.Popen(
                [*CLI, "serve", "--port", str(port)], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.serve.poll() is not None:
                raise SystemExit(f"serve exited with {self.serve.returncode}; see {self.log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + ".well-known/agent-card.json", timeout=2).is_success:
                    return
            time.sleep(0.3)
        raise SystemExit(f"serve did not answer within 120 s; see {self.log}")

    def signal_serve(self, sig: int) -> float:
        """Send ``sig`` to this bench's own serve process; seconds until it ended."""
        assert self.serve is not None
        started = time.monotonic()
        os.kill(self.serve.pid, sig)
        self.serve.wait(timeout=STOP_TIMEOUT + 60)
        return time.monotonic() - started

    def assess(self, participant: str, *options: str) -> subprocess.Popen[str]:
        config = json.dumps({"instance_ids": [INSTANCE]})
        return subprocess.Popen(
            [*CLI, "assess", self.url, "--participant", participant, "--config", config,
             *options],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip

    # ------------------------------------------------------------------ counting
    def reaped_by_serve(self) -> set[str]:
        """The runs this bench's serve processes reaped at their start (from their log)."""
        reaped: set[str] = set()
        for line in self.log.read_text(errors="replace").splitlines():
            if "housekeeping.reaped_dead_holders" in line and (found := REAPED.search(line)):
                reaped |= set(re.findall(r"'([^']+)'", found[1]))
        return reaped

    def run_ids(self) -> set[str]:
        return {p.name for p in self.runs_dir.iterdir()} if self.runs_dir.is_dir() else set()

    def left(self) -> Left:
        runs = self.run_ids()
        containers = [
            c for c in self.client.containers.list(filters={"label": LABEL_RUN})
            if c.labels.get(LABEL_RUN) in runs
        ]  # fmt: skip
        volumes = [
            v for v in self.client.volumes.list(filters={"label": LABEL_LEASE})
            if (v.attrs.get("Labels") or {}).get(LABEL_RUN) in runs
        ]  # fmt: skip
        files = list((self.data_dir / LEASES_DIR).glob("*.json"))
        return Left(len(containers), len(files), len(volumes))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(until: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def _at_work(bench: Bench, slow: ScriptedParticipant) -> Callable[[], bool]:
    """Whether the participant has a new task (``slow`` has one more conversation than now)
    and the newest run's participant container runs."""
    conversations, runs = len(slow.states), bench.run_ids()

    def working() -> bool:
        new = bench.run_ids() - runs
        if len(slow.states) <= conversations or not new:
            return False
        labels = [f"{LABEL_RUN}={run}" for run in new]
        found = bench.client.containers.list(filters={"label": labels[:1]})
        return any(c.name.endswith("-participant") for c in found)

    return working


def faults(bench: Bench, slow: ScriptedParticipant, slow_url: str, sig: int, n: int) -> dict:
    """``n`` times: an assessment, the participant at work, ``sig`` to serve, a new serve."""
    before, after_fault, after_start, exits, stop_s = [], [], [], Counter(), []
    faulted, told = [], 0
    for _ in range(n):
        at_work = _at_work(bench, slow)
        runs = bench.run_ids()
        client = bench.assess(slow_url)
        _wait(at_work, 900, "the participant's task")
        faulted += list(bench.run_ids() - runs)
        before.append(bench.left().containers)
        seconds = bench.signal_serve(sig)
        if sig == signal.SIGTERM:
            stop_s.append(seconds)
        try:
            output, _ = client.communicate(timeout=120)
            exits[client.returncode] += 1
            told += "the green agent is stopping" in output
        except subprocess.TimeoutExpired:
            client.kill()
            exits["hung"] += 1
        after_fault.append(bench.left())
        bench.start_serve()  # the next start reaps
        after_start.append(bench.left())
    return {
        "faults": n,
        "running_before": sum(before),
        "left_after_fault": _sum(after_fault),
        "left_after_next_start": _sum(after_start),
        "reaped_by_the_next_serve": len(set(faulted) & bench.reaped_by_serve()),
        "assess_exit_statuses": dict(exits),
        "assess_told_canceled": told,
        "stop_seconds": [round(s, 1) for s in stop_s],
    }


def _sum(lefts: list[Left]) -> dict[str, int]:
    return {
        "containers": sum(x.containers for x in lefts),
        "lease_files": sum(x.lease_files for x in lefts),
        "lease_volumes": sum(x.lease_volumes for x in lefts),
    }


async def _cancel_one(url: str, participant: str, at_work: Callable[[], bool]) -> str:
    """Send an assessment, cancel it once the participant has the task; the task's state."""
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.helpers import new_text_part
    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        Message,
        Role,
        SendMessageRequest,
        TaskState,
    )

    request = json.dumps(
        {"participants": {"agent": participant}, "config": {"instance_ids": [INSTANCE]}}
    )
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None)) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_text_part(request)]
        )
        stream = client.send_message(SendMessageRequest(message=message))
        task_id = ""
        async for event in stream:
            if event.HasField("status_update"):
                task_id = event.status_update.task_id
                break
        await stream.aclose()
        deadline = time.monotonic() + 900
        while not await asyncio.to_thread(at_work) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await client.cancel_task(CancelTaskRequest(id=task_id))
        later = await client.get_task(GetTaskRequest(id=task_id))
        await client.close()
    return TaskState.Name(later.status.state).removeprefix("TASK_STATE_").lower()


def measure(kills: int, terms: int, cancels: int, image: str) -> dict:
    work = Path(tempfile.mkdtemp(prefix="swe-green-serve-faults-"))
    prefix = f"swe-green-bench-faults-{uuid.uuid4().hex[:8]}"
    client = docker.from_env()
    client.images.get(image).tag(f"{prefix}/base", "py3.11")
    synthetic = build_synthetic(work / "synthetic")
    env = {
        **os.environ,
        "SWE_GREEN_DATA_DIR": str(work / "data"),
        "SWE_GREEN_RUNS_DIR": str(work / "runs"),
        "SWE_GREEN_DATASET": str(synthetic / "instances.jsonl"),
        "SWE_GREEN_MIRROR_DIR": str(synthetic / "mirrors"),
        "SWE_GREEN_RECIPES_FILE": str(synthetic / "recipes.json"),
        "SWE_GREEN_IMAGE_PREFIX": prefix,
        "SWE_GREEN_SETUP_STRATEGY": "recipe",
        "SWE_GREEN_MEMORY": "2g",
        "SWE_GREEN_UNPRIVILEGED_TESTS": "true",
        "SWE_GREEN_SERVE_STOP_TIMEOUT": str(STOP_TIMEOUT),
        "SWE_GREEN_VALIDATE_ENV": "false",
        "COLUMNS": "200",
    }
    bench = Bench(env, work / "runs", work / "data", client, work / "serve.log")
    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=600)))
    gold = make_participant("gold", dataset=env["SWE_GREEN_DATASET"])
    summary: dict = {}
    try:
        with running(slow) as slow_url, running(gold) as gold_url:
            bench.start_serve()
            summary["kill -9"] = faults(bench, slow, slow_url, signal.SIGKILL, kills)
            summary["SIGTERM"] = faults(bench, slow, slow_url, signal.SIGTERM, terms)
            states = Counter(
                asyncio.run(_cancel_one(bench.url, slow_url, _at_work(bench, slow)))
                for _ in range(cancels)
            )
            summary["cancel"] = {"cancels": cancels, "states": dict(states),
                                 "left_after": bench.left().__dict__}  # fmt: skip
            result = work / "result.json"
            done = bench.assess(gold_url, "--output", str(result))
            done.communicate(timeout=900)
            row = json.loads(result.read_text()) if result.is_file() else {}
            summary["new assessment"] = {
                "exit_status": done.returncode,
                "resolved": f"{row.get('resolved_pct', 0):.0%} of {row.get('total_instances', 0)}",
            }
            bench.signal_serve(signal.SIGTERM)
            summary["after the last stop"] = bench.left().__dict__
    finally:
        if bench.serve is not None and bench.serve.poll() is None:
            bench.serve.kill()
        _clean(client, bench.run_ids(), prefix)
        shutil.rmtree(work, ignore_errors=True)
    return summary


def _clean(client: docker.DockerClient, runs: set[str], prefix: str) -> None:
    """Remove what this bench made: its runs' containers and volumes, its images."""
    for container in client.containers.list(all=True, filters={"label": LABEL_RUN}):
        if container.labels.get(LABEL_RUN) in runs:
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True, v=True)
    for volume in client.volumes.list(filters={"label": LABEL_RUN}):
        if (volume.attrs.get("Labels") or {}).get(LABEL_RUN) in runs:
            with contextlib.suppress(docker.errors.APIError):
                volume.remove(force=True)
    for img in client.images.list(name=f"{prefix}/*"):
        for tag in img.tags:
            if tag.startswith(prefix + "/"):
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(tag, force=True)


def show(summary: dict) -> None:
    print(f"instance {INSTANCE} (synthetic), one assessment per serve process")
    print(
        "| fault | n | containers running at the fault | left after it: containers, "
        "lease files, lease volumes | left after the next start | assess exit statuses |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name in ("kill -9", "SIGTERM"):
        row = summary[name]
        after, start = row["left_after_fault"], row["left_after_next_start"]
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(row["assess_exit_statuses"].items(),
                                                             key=str))  # fmt: skip
        print(
            f"| {name} | {row['faults']} | {row['running_before']} | {after['containers']}, "
            f"{after['lease_files']}, {after['lease_volumes']} | {start['containers']}, "
            f"{start['lease_files']}, {start['lease_volumes']} | {statuses} |"
        )
    kills = summary["kill -9"]
    print(
        f"runs of killed serve processes that the next serve reaped at its start: "
        f"{kills['reaped_by_the_next_serve']} of {kills['faults']}"
    )
    terms = summary["SIGTERM"]
    print(
        f"assess clients of stopped serve processes told their task ended canceled: "
        f"{terms['assess_told_canceled']} of {terms['faults']}"
    )
    stops = summary["SIGTERM"]["stop_seconds"]
    if stops:
        print(
            f"SIGTERM to the end of serve: median {statistics.median(stops):.1f} s, "
            f"longest {max(stops):.1f} s"
        )
    cancel = summary["cancel"]
    print(
        f"tasks/cancel: {cancel['states'].get('canceled', 0)} of {cancel['cancels']} ended "
        f"canceled ({cancel['states']}); left after: {cancel['left_after']}"
    )
    new = summary["new assessment"]
    print(
        f"a new assessment after the faults: exit status {new['exit_status']}, "
        f"resolved {new['resolved']}; left after the last stop: "
        f"{summary['after the last stop']}"
    )
    print(json.dumps(summary))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--terms", type=int, default=5)
    parser.add_argument("--cancels", type=int, default=3)
    parser.add_argument("--image", default="swe-green/base:py3.11")
    parser.add_argument("--smoke", action="store_true", help="one kill, one SIGTERM, one cancel")
    args = parser.parse_args()
    if args.smoke:
        args.kills = args.terms = args.cancels = 1
    show(measure(args.kills, args.terms, args.cancels, args.image))


if __name__ == "__main__":
    main()
