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
from orchestrator.run.results_file import BENCHMARK, InstanceRow, ResultsFile, benchmark_name


def write_leaderboard(
    run_dir: RunDir,
    participant_role: str,
    participant_id: str,
    results: Iterable[InstanceResult] | None = None,
) -> Path:
    """Write ``results.json``: the participant, the leaderboard row, and per-instance rows.

    ``results`` defaults to the results on disk. The layout is the one the AgentBeats
    leaderboard query reads (DESIGN "Results"); ``instances`` and ``benchmark`` are
    extra keys with a fixed shape, so files of several runs read together; ``benchmark``
    names the dataset the run's configuration records (:func:`.results_file.benchmark_name`;
    SWE-bench Verified when none is recorded). The same results
    are written in the official harness's layout too (:mod:`.official_layout`).
    """
    chosen = run_dir.load_results() if results is None else list(results)
    dataset = run_dir.read_config().get("settings", {}).get("dataset")
    payload = ResultsFile(
        benchmark=benchmark_name(dataset) if isinstance(dataset, str) and dataset else BENCHMARK,
        participants={participant_role: participant_id},
        results=[aggregate(chosen)],
        instances=[InstanceRow.of(r) for r in sorted(chosen, key=lambda r: r.instance_id)],
    ).model_dump(mode="json")
    atomic_write_text(run_dir.leaderboard_path, json.dumps(payload, indent=2) + "\n")
    write_official_layout(run_dir, participant_id, chosen)
    return run_dir.leaderboard_path
