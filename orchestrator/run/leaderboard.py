"""The leaderboard file of a run (``results.json``, DESIGN "Results"): the participant, the
leaderboard row, and a row per instance."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from orchestrator.atomic import atomic_write_text
from orchestrator.context.run_dir import RunDir
from orchestrator.grading.classify import aggregate
from orchestrator.models import InstanceResult
from orchestrator.run.official_layout import write_official_layout

BENCHMARK = "swe-bench-verified"


def write_leaderboard(
    run_dir: RunDir,
    participant_role: str,
    participant_id: str,
    results: Iterable[InstanceResult] | None = None,
) -> Path:
    """Write ``results.json``: the participant, the leaderboard row, and per-instance rows.

    ``results`` defaults to the results on disk. The layout is the one the AgentBeats
    leaderboard query reads (DESIGN "Results"); ``instances`` and ``benchmark`` are
    extra keys with a fixed shape, so files of several runs read together. The same results
    are written in the official harness's layout too (:mod:`.official_layout`).
    """
    chosen = run_dir.load_results() if results is None else list(results)
    row = aggregate(chosen)
    payload = {
        "participants": {participant_role: participant_id},
        "results": [row.model_dump()],
        "benchmark": BENCHMARK,
        "instances": [
            {
                "instance_id": result.instance_id,
                "repo": result.repo,
                "status": result.status.value,
                "reason": result.reason.value,
                "fail_to_pass_passed": len(result.tests.fail_to_pass_passed),
                "fail_to_pass_total": len(result.tests.fail_to_pass_passed)
                + len(result.tests.fail_to_pass_failed),
                "pass_to_pass_passed": len(result.tests.pass_to_pass_passed),
                "pass_to_pass_total": len(result.tests.pass_to_pass_passed)
                + len(result.tests.pass_to_pass_failed),
            }
            for result in sorted(chosen, key=lambda result: result.instance_id)
        ],
    }
    atomic_write_text(run_dir.leaderboard_path, json.dumps(payload, indent=2) + "\n")
    write_official_layout(run_dir, participant_id, chosen)
    return run_dir.leaderboard_path
