"""Predictions files: every format the field writes, and each mistake as one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.errors import UserError
from orchestrator.participant.predictions import Predictions, load_predictions

from .reference_data import SHARED_DATA, shared_data

KNOWN = {"demo__calc-1", "demo__textkit-1", "demo__units-1"}
PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def _row(iid: str, patch: str | None = PATCH, model: str = "agent-7") -> dict:
    return {"instance_id": iid, "model_name_or_path": model, "model_patch": patch}


def test_swe_bench_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(
        json.dumps(_row("demo__calc-1")) + "\n\n" + json.dumps(_row("demo__units-1", None)) + "\n"
    )
    loaded = load_predictions(path, KNOWN)
    assert loaded.model == "agent-7"
    assert loaded.patches == {"demo__calc-1": PATCH, "demo__units-1": None}
    assert loaded.only("demo__units-1").patches == {"demo__units-1": None}


def test_json_list_and_preds_json_dict(tmp_path: Path) -> None:
    listed = tmp_path / "predictions.json"
    listed.write_text(json.dumps([_row("demo__calc-1"), _row("demo__textkit-1", "")]))
    assert load_predictions(listed, KNOWN).patches == {"demo__calc-1": PATCH, "demo__textkit-1": ""}
    keyed = tmp_path / "preds.json"
    keyed.write_text(json.dumps({"demo__calc-1": _row("demo__calc-1", model="mini")}, indent=2))
    loaded = load_predictions(keyed, KNOWN)
    assert (loaded.model, loaded.patches) == ("mini", {"demo__calc-1": PATCH})


def test_a_harness_log_directory_and_an_earlier_run(tmp_path: Path) -> None:
    harness = tmp_path / "logs" / "run_evaluation" / "r1" / "my-model"
    (harness / "demo__calc-1").mkdir(parents=True)
    (harness / "demo__calc-1" / "patch.diff").write_text(PATCH)
    (harness / "demo__calc-1" / "report.json").write_text("{}")
    loaded = load_predictions(harness, KNOWN)
    assert (loaded.model, loaded.patches) == ("my-model", {"demo__calc-1": PATCH})

    run = tmp_path / "run-1"
    (run / "instances" / "demo__units-1").mkdir(parents=True)
    (run / "instances" / "demo__units-1" / "patch.diff").write_text(PATCH)
    (run / "config.json").write_text(json.dumps({"participant_id": "agent-x"}))
    loaded = load_predictions(run, KNOWN)
    assert (loaded.model, loaded.patches) == ("agent-x", {"demo__units-1": PATCH})


@shared_data
def test_the_real_development_predictions_load(tmp_path: Path) -> None:
    replay = SHARED_DATA / "replay" / "vexp-claude-code-opus45.jsonl"
    loaded = load_predictions(replay)  # extra keys (official, source) are ignored
    assert isinstance(loaded, Predictions)
    assert loaded.model == "vexp-claude-code-opus45" and len(loaded.patches) == 46


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"instance_id": "demo__calc-1", "model_patch": "x"}\nnot json\n', "line 2 is not JSON"),
        (json.dumps(_row("demo__calc-1")) + "\n" + json.dumps(_row("demo__calc-1")) + "\n",
         "line 2: instance demo__calc-1 again (first at line 1)"),
        (json.dumps(_row("django__django-1")) + "\n",
         "line 1: instance django__django-1 is not in the dataset"),
        ('{"instance_id": "demo__calc-1"}\n', "line 1 has no model_patch"),
        ('{"model_patch": "x"}\n', "line 1 has no instance_id"),
        ('{"instance_id": "demo__calc-1", "model_patch": 3}\n', "line 1: model_patch is not a"),
        ("[1]", "entry 1 is not a JSON object"),
        (json.dumps(_row("demo__calc-1")) + "\n" + json.dumps(_row("demo__units-1", model="b"))
         + "\n", "several models (agent-7, b)"),
        ('{"demo__calc-1": {"instance_id": "demo__units-1", "model_patch": ""}}',
         "entry 'demo__calc-1' holds instance_id 'demo__units-1'"),
        ("", "is empty"),
    ],
)  # fmt: skip
def test_mistakes_are_one_error_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(text)
    with pytest.raises(UserError) as raised:
        load_predictions(path, KNOWN)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_missing_file_or_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_predictions(tmp_path / "nope.jsonl", KNOWN)
    with pytest.raises(UserError, match="holds no <instance_id>/patch.diff"):
        load_predictions(tmp_path, KNOWN)
