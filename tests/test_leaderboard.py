"""The leaderboard on the platform: our artifact as the gateway collects it, the file the
runner writes from the shards, and the queries DuckDB runs on it (the seed's, from DESIGN.md,
and the one we ship in examples/ that picks the participant's id and merges shards)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.server.assessment import parse_request
from orchestrator.frontends.server.assessment_text import leaderboard_data, summary_text
from orchestrator.frontends.shared.compat03 import integral
from orchestrator.models import Reason, Status
from orchestrator.run.leaderboard import write_leaderboard
from tests.test_results import _result, leaderboard_rows

ROOT = Path(__file__).resolve().parents[1]
QUERY = (ROOT / "examples" / "leaderboard.sql").read_text()
GREEN_ID = "019a-green-swe-green"
PURPLE_ID = "019b-purple-agent"
# the leaderboard scenario's component names, as in the template's scenario.json5
IDS = {"swe_green": GREEN_ID, "participant_1": PURPLE_ID}


def run_query(results_dir: Path, query: str = QUERY) -> list[tuple]:
    con = duckdb.connect()
    if int(duckdb.__version__.split(".")[0]) >= 2:
        con.execute("SET lambda_syntax='ENABLE_SINGLE_ARROW'")
    con.execute(
        f"CREATE VIEW results AS SELECT * FROM read_json_auto('{results_dir.as_posix()}/*.json')"
    )
    return con.execute(query).fetchall()


def gateway_results(parts: list[dict[str, Any]]) -> list[Any]:
    """The gateway's parse_parts over our artifact: every data part, and every text part that
    parses as JSON."""
    collected = []
    for part in parts:
        if "text" in part:
            try:
                collected.append(json.loads(part["text"]))
            except ValueError:
                continue
        else:
            collected.append(part["data"])
    return collected


def shard_file(tmp_path: Path, shard: str, results: list, role: str = "participant_1") -> dict:
    """One shard as the gateway serves it: our artifact's parts, through a 0.3 client (whole
    numbers as integers), collected into {"status", "results"}."""
    index, total = shard.split("/")
    config = {"shard_index": int(index) - 1, "num_shards": int(total), "bogus": 1}
    request = parse_request(
        json.dumps({"participants": {role: "http://127.0.0.1:8080/" + role}, "config": config})
    )
    run_dir = RunDir(tmp_path / f"a2a-shard-{index}")
    for result in results:
        run_dir.write_result(result)
    row, data = leaderboard_data(run_dir, request, "gold-participant", results)
    parts = [
        {
            "kind": "text",
            "text": summary_text(row, "gold", run_dir.path.name, "Ignored: x.", dataset="verified"),
        },
        {"kind": "data", "data": integral(json.loads(json.dumps(data, allow_nan=False)))},
    ]
    return {"status": "completed", "results": gateway_results(parts)}


def submission(shards: list[dict], ids: dict[str, str] = IDS) -> dict:
    """The runner's summary step: jq -s '{status, participants: $ids, results: [.[].results[]]}'."""
    statuses = [s["status"] for s in shards]
    status = (
        "completed"
        if all(s == "completed" for s in statuses)
        else "partial"
        if "completed" in statuses
        else "failed"
    )
    return {
        "status": status,
        "participants": ids,
        "results": [row for s in shards for row in s["results"]],
    }


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """Two submissions: one in two shards (2 + 1 instances), one in a single shard."""
    first = submission(
        [
            shard_file(
                tmp_path,
                "1/2",
                [
                    _result("a__b-1", Status.RESOLVED, f=(2, 0), p=(3, 0)),
                    _result("a__b-2", Status.ERROR, reason=Reason.TEST_TIMEOUT),
                ],
            ),
            shard_file(tmp_path, "2/2", [_result("a__b-3", Status.RESOLVED)]),
        ]
    )
    second = submission(
        [shard_file(tmp_path, "1/1", [_result("a__b-1", Status.NO_OP, f=(0, 1), p=(1, 1))])],
        ids={"swe_green": GREEN_ID, "participant_1": "019c-other-agent"},
    )
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "alice-20260101-000000.json").write_text(json.dumps(first, indent=2))
    (directory / "bob-20260102-000000.json").write_text(json.dumps(second, indent=2))
    return directory


def test_the_gateway_collects_one_row_per_shard_with_integers(results_dir: Path) -> None:
    data = json.loads((results_dir / "alice-20260101-000000.json").read_text())
    assert [row["shard"] for row in data["results"]] == ["1/2", "2/2"]  # the summary: not JSON
    assert [row["total_instances"] for row in data["results"]] == [2, 1]
    text = (results_dir / "alice-20260101-000000.json").read_text()
    assert '"total_instances": 2,' in text and '"resolved_count": 1,' in text
    assert '"total_instances": 2.0' not in text
    assert data["results"][0]["participant_role"] == "participant_1"


def test_the_seed_query_still_reads_our_results_but_shows_the_green_id(
    results_dir: Path,
) -> None:
    """DESIGN.md's query runs unchanged; on the platform's file it shows the green agent's
    id (listed first) and one row per shard: why we ship our own query."""
    rows = leaderboard_rows(results_dir)
    assert [row[0] for row in rows] == [GREEN_ID] * 3
    assert sorted(row[-1] for row in rows) == [1, 1, 2]


def test_our_query_picks_the_participant_and_merges_the_shards(results_dir: Path) -> None:
    rows = run_query(results_dir)
    assert rows == [
        # id, resolved, breaking, partial, wip, regression, no-op, error, f2p, p2p, total, shards
        (PURPLE_ID, 66.67, 0.0, 0.0, 0.0, 0.0, 0.0, 33.33, 66.67, 66.67, 3, 2),
        ("019c-other-agent", 0.0, 0.0, 0.0, 0.0, 0.0, 100.0, 0.0, 0.0, 50.0, 1, 1),
    ]


def test_our_query_without_a_matching_role_takes_the_last_id(tmp_path: Path) -> None:
    """A role that is not a component name: the id after the green agent's."""
    shard = shard_file(tmp_path, "1/1", [_result("a__b-1", Status.RESOLVED)], role="agent")
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "s.json").write_text(json.dumps(submission([shard])))
    assert run_query(directory)[0][0] == PURPLE_ID


def test_a_failed_shard_leaves_the_others_and_an_all_failed_submission_no_row(
    tmp_path: Path,
) -> None:
    ok = shard_file(tmp_path, "1/2", [_result("a__b-1", Status.RESOLVED)])
    failed = {"status": "failed", "results": []}  # the gateway's file for a failed task
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "partial.json").write_text(json.dumps(submission([ok, failed])))
    (directory / "failed.json").write_text(
        json.dumps(submission([failed], ids={"swe_green": GREEN_ID, "participant_1": "x"}))
    )
    rows = run_query(directory)
    assert [(row[0], row[1], row[-2], row[-1]) for row in rows] == [(PURPLE_ID, 100.0, 1, 1)]


def test_the_example_config_holds_the_shipped_query() -> None:
    config = json.loads((ROOT / "examples" / "leaderboard.json").read_text())
    (entry,) = config["queries"]
    body = "\n".join(line for line in QUERY.splitlines() if not line.startswith("--")).strip()
    assert entry["query"] == body


def batch_file(tmp_path: Path, name: str, participant_id: str, results: list) -> dict:
    """A `swe-green run` results.json, as the batch job writes it."""
    run_dir = RunDir(tmp_path / name)
    return json.loads(write_leaderboard(run_dir, "agent", participant_id, results).read_text())


def test_our_query_reads_batch_output_alone_and_mixed_with_the_runners(
    tmp_path: Path, results_dir: Path
) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    one = batch_file(tmp_path, "run-1", "nightly-agent", [
        _result("a__b-1", Status.RESOLVED, f=(2, 0), p=(3, 0)),
        _result("a__b-2", Status.ERROR, reason=Reason.TEST_TIMEOUT),
    ])  # fmt: skip
    two = batch_file(tmp_path, "run-2", "other-agent", [_result("a__b-1", Status.NO_OP)])
    (batch / "run-1.json").write_text(json.dumps(one))
    (batch / "run-2.json").write_text(json.dumps(two))
    # batch output alone (no participant_role anywhere): no binder error, the only id
    rows = run_query(batch)
    assert [(row[0], row[1], row[-2], row[-1]) for row in rows] == [
        ("nightly-agent", 50.0, 2, 1), ("other-agent", 0.0, 1, 1),
    ]  # fmt: skip
    # mixed with the runner's files in one folder
    (results_dir / "run-1.json").write_text(json.dumps(one))
    mixed = {row[0]: (row[1], row[-2], row[-1]) for row in run_query(results_dir)}
    assert mixed == {
        PURPLE_ID: (66.67, 3, 2), "019c-other-agent": (0.0, 1, 1),
        "nightly-agent": (50.0, 2, 1),
    }  # fmt: skip
