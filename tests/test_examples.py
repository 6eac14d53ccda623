"""The shipped examples run as written: examples/scenario.toml (the AgentBeats tutorial's
runner starts each `cmd`, then sends the config to the green agent) and compose.yaml (each
service's command through the green image's entrypoint). Real processes, real HTTP; only the
ports are swapped for free ones, so tests on one machine do not collide."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.participant.transport import tls_context
from tests.test_server import assess, final_status

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ENTRYPOINT = ROOT / "images" / "green" / "entrypoint.sh"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def started(argv: list[str], env: dict[str, str], card: str) -> Iterator[dict]:
    """Run ``argv`` until its agent card answers at ``card``; yields the card; stops it."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{argv} exited {proc.returncode}: {proc.stdout.read()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                response = httpx.get(card, timeout=2, verify=tls_context())
                if response.status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"{argv} did not serve its card at {card}")
            time.sleep(0.2)
        yield response.json()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _env(synthetic_dir: Path, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "SWE_GREEN_DATASET": str(synthetic_dir / "instances.jsonl"),
        "SWE_GREEN_RUNS_DIR": str(tmp_path / "runs"),
        "SWE_GREEN_DATA_DIR": str(tmp_path / "data"),
    }


def _swap_ports(text: str, ports: dict[str, int]) -> str:
    for old, new in ports.items():
        text = text.replace(old, str(new))
    return text


def test_scenario_toml_runs_as_written(synthetic_dir: Path, tmp_path: Path) -> None:
    """As agentbeats-run does: start each cmd, wait for the cards, send {participants, config}
    (role -> endpoint). The dataset here is the synthetic one, so the scenario's real ids are
    answered with a clear rejection: every step before the evaluation ran as written."""
    ports = {"9009": _free_port(), "9019": _free_port()}
    scenario = tomllib.loads(_swap_ports((ROOT / "examples/scenario.toml").read_text(), ports))
    env = _env(synthetic_dir, tmp_path)
    green = scenario["green_agent"]
    (participant,) = scenario["participants"]
    p_card = participant["endpoint"] + "/.well-known/agent-card.json"
    g_card = green["endpoint"] + "/.well-known/agent-card.json"
    with (
        started(shlex.split(participant["cmd"]), env, p_card),
        started(shlex.split(green["cmd"]), env, g_card) as card,
    ):
        assert card["url"] == f"http://127.0.0.1:{ports['9009']}/"
        request = json.dumps(
            {
                "participants": {participant["role"]: participant["endpoint"]},
                "config": scenario["config"],
            }
        )
        state, message = final_status(assess(green["endpoint"] + "/", request))
    assert state == "TASK_STATE_REJECTED"
    assert "Unknown instance id(s): django__django-11099, sympy__sympy-20590" in message


def _compose() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def test_compose_services_start_through_the_image_entrypoint(
    synthetic_dir: Path, tmp_path: Path
) -> None:
    """compose.yaml's commands, given to the green image's entrypoint script (the real
    swe-green on PATH): the green agent serves with the card URL it was given, and so does the
    gold participant, which takes its dataset from SWE_GREEN_DATASET."""
    services = _compose()["services"]
    ports = {"9009": _free_port(), "9019": _free_port()}
    env = _env(synthetic_dir, tmp_path)
    green = [_swap_ports(arg, ports) for arg in services["green"]["command"]]
    participant = [_swap_ports(arg, ports) for arg in services["participant"]["command"]]
    assert green[0] == "--host" and participant[:2] == ["participant", "gold"]
    assert "--dataset" not in participant
    p_url = f"http://127.0.0.1:{ports['9019']}/.well-known/agent-card.json"
    g_url = f"http://127.0.0.1:{ports['9009']}/.well-known/agent.json"  # the legacy path too
    # compose's own serve settings (its allow-list: serve refuses 0.0.0.0 with nobody checked)
    green_env = env | {
        name: re.sub(r"^\$\{\w+:-(.*)\}$", r"\1", str(value))
        for name, value in services["green"]["environment"].items()
        if name.startswith("SWE_GREEN_SERVE_")
    }
    with (
        started([str(ENTRYPOINT), *participant], env, p_url) as p_card,
        started([str(ENTRYPOINT), *green], green_env, g_url) as g_card,
    ):
        assert g_card["url"] == f"http://green:{ports['9009']}/"
        assert p_card["url"] == f"http://participant:{ports['9019']}/"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "serve --host 0.0.0.0 --port 9009"),
        (["--host", "0.0.0.0", "--port", "9009", "--card-url", "http://x:9009/"],
         "serve --host 0.0.0.0 --port 9009 --card-url http://x:9009/"),
        (["serve", "--port", "1"], "serve --port 1"),
        (["participant", "gold", "--port", "9019"], "participant gold --port 9019"),
        (["swe-green", "images", "build"], "images build"),
        (["--help"], "--help"),
    ],
)  # fmt: skip
def test_entrypoint_sends_options_to_serve(tmp_path: Path, args: list[str], expected: str) -> None:
    fake = tmp_path / "swe-green"
    fake.write_text('#!/bin/sh\necho "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == expected


def test_green_dockerfile_uses_the_entrypoint() -> None:
    dockerfile = (ROOT / "images/green/Dockerfile").read_text()
    assert 'ENTRYPOINT ["swe-green-entrypoint"]' in dockerfile
    assert "images/green/entrypoint.sh /usr/local/bin/swe-green-entrypoint" in dockerfile
