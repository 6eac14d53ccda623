"""Predictions files: the patches an agent already wrote, graded without a participant server.

The formats the field uses, read by :func:`load_predictions`:

- SWE-bench's ``predictions.jsonl``: one JSON object a line with ``instance_id``,
  ``model_name_or_path`` and ``model_patch``;
- a JSON list of such objects (``predictions.json``);
- a JSON object keyed by instance id (sb-cli's and mini-swe-agent's ``preds.json``), whose
  values hold ``model_patch`` (and ``model_name_or_path``);
- a directory of ``<instance_id>/patch.diff`` files: the official harness's log directory of
  one model (``logs/run_evaluation/<run>/<model>``), or an earlier swe-green run directory
  (its ``instances/<id>/patch.diff``; the participant id comes from its ``config.json``).

A null or empty patch is a prediction too (graded ``no_op``). Every problem (malformed row,
missing field, duplicate id, id not in the dataset, several models in one file) is one
:class:`UserError` naming the line (or entry), raised before any container starts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from orchestrator.errors import UserError

PATCH_FILE = "patch.diff"
_FORMATS = (
    "a predictions.jsonl (instance_id, model_name_or_path, model_patch a line), a JSON list "
    "of those, a preds.json object keyed by instance id, or a directory of "
    "<instance_id>/patch.diff"
)


class Predictions(BaseModel):
    """One model's patches by instance id (None: the model gave no patch)."""

    source: str
    model: str
    patches: dict[str, str | None] = Field(default_factory=dict)

    def only(self, instance_id: str) -> Predictions:
        """These predictions cut to one instance (what travels with one instance's job)."""
        return self.model_copy(update={"patches": {instance_id: self.patches.get(instance_id)}})


class _Row(BaseModel):
    where: str  # "line 3", "entry 'x'", "x/patch.diff"
    instance_id: str
    model: str | None
    patch: str | None


def load_predictions(path: Path, known_ids: Iterable[str] | None = None) -> Predictions:
    """Read a predictions file or directory; ``known_ids``: the dataset's instance ids."""
    if not path.exists():
        raise UserError(f"Predictions file {path} does not exist.", "check the path.")
    if path.is_dir():
        rows, default_model = _directory_rows(path), _directory_model(path)
    else:
        rows, default_model = _file_rows(path), path.stem
    return _checked(str(path), rows, default_model, known_ids)


def _file_rows(path: Path) -> list[_Row]:
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    stripped = text.lstrip()
    if not stripped:
        raise UserError(f"Predictions file {path} is empty.", f"pass {_FORMATS}.")
    if stripped.startswith("["):
        return [_row(item, f"entry {n}", path) for n, item in enumerate(_json(text, path), 1)]
    if stripped.startswith("{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON lines: parsed line by line below
        if isinstance(whole, dict) and not {"instance_id", "model_patch"} & set(whole):
            return [_keyed_row(key, value, path) for key, value in whole.items()]
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{path} line {number} is not JSON ({exc.msg}).", f"pass {_FORMATS}."
            ) from None
        rows.append(_row(item, f"line {number}", path))
    return rows


def _json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}).", f"pass {_FORMATS}."
        ) from None


def _row(item: Any, where: str, path: Path) -> _Row:
    if not isinstance(item, dict):
        raise UserError(f"{path} {where} is not a JSON object.", f"pass {_FORMATS}.")
    instance_id = item.get("instance_id")
    if not isinstance(instance_id, str) or not instance_id:
        raise UserError(f"{path} {where} has no instance_id.", "give every row its instance_id.")
    return _Row(
        where=where,
        instance_id=instance_id,
        model=_model(item, where, path),
        patch=_patch(item, where, path),
    )


def _keyed_row(key: str, value: Any, path: Path) -> _Row:
    where = f"entry {key!r}"
    if isinstance(value, str | None):  # {id: patch}
        return _Row(where=where, instance_id=key, model=None, patch=value)
    if not isinstance(value, dict):
        raise UserError(f"{path} {where} is not a JSON object.", f"pass {_FORMATS}.")
    inner = value.get("instance_id", key)
    if inner != key:
        raise UserError(
            f"{path} {where} holds instance_id {inner!r}, not its key.", "make them agree."
        )
    return _Row(
        where=where, instance_id=key, model=_model(value, where, path),
        patch=_patch(value, where, path),
    )  # fmt: skip


def _model(item: dict[str, Any], where: str, path: Path) -> str | None:
    model = item.get("model_name_or_path")
    if model is not None and not isinstance(model, str):
        raise UserError(f"{path} {where}: model_name_or_path is not a string.", "fix the row.")
    return model or None


def _patch(item: dict[str, Any], where: str, path: Path) -> str | None:
    if "model_patch" not in item:
        raise UserError(
            f"{path} {where} has no model_patch.", "give every row its model_patch (null: none)."
        )
    patch = item["model_patch"]
    if patch is not None and not isinstance(patch, str):
        raise UserError(f"{path} {where}: model_patch is not a string.", "fix the row.")
    return patch


def _directory_rows(path: Path) -> list[_Row]:
    base = path / "instances" if (path / "instances").is_dir() else path
    rows = [
        _Row(
            where=str(patch_file.relative_to(path)),
            instance_id=patch_file.parent.name,
            model=None,
            patch=patch_file.read_text(encoding="utf-8", errors="surrogateescape"),
        )
        for patch_file in sorted(base.glob(f"*/{PATCH_FILE}"))
    ]
    if not rows:
        raise UserError(
            f"Directory {path} holds no <instance_id>/{PATCH_FILE}.", f"pass {_FORMATS}."
        )
    return rows


def _directory_model(path: Path) -> str:
    """An earlier run's participant id, else the directory's name (the harness's model)."""
    config = path / "config.json"
    if config.is_file():
        try:
            saved = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            saved = {}
        if isinstance(saved, dict) and saved.get("participant_id"):
            return str(saved["participant_id"])
    return path.resolve().name


def _checked(
    source: str, rows: list[_Row], default_model: str, known_ids: Iterable[str] | None
) -> Predictions:
    if not rows:
        raise UserError(f"{source} holds no prediction.", f"pass {_FORMATS}.")
    known = set(known_ids) if known_ids is not None else None
    seen: dict[str, str] = {}
    for row in rows:
        if row.instance_id in seen:
            raise UserError(
                f"{source} {row.where}: instance {row.instance_id} again "
                f"(first at {seen[row.instance_id]}).",
                "keep one prediction per instance.",
            )
        seen[row.instance_id] = row.where
        if known is not None and row.instance_id not in known:
            raise UserError(
                f"{source} {row.where}: instance {row.instance_id} is not in the dataset.",
                "check the id, or the dataset (SWE_GREEN_DATASET / --dataset).",
            )
    models = sorted({row.model for row in rows if row.model})
    if len(models) > 1:
        raise UserError(
            f"{source} holds predictions of several models ({', '.join(models)}).",
            "grade one model's predictions per run (split the file).",
        )
    return Predictions(
        source=source,
        model=models[0] if models else default_model,
        patches={row.instance_id: row.patch for row in rows},
    )
