"""What a batch run (``swe-green run``, ``demo``) evaluates, and how a resumed run gets it
back from the run directory."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import read_json
from orchestrator.settings import load_settings


@dataclasses.dataclass
class RunPlan:
    """What a batch run evaluates, as given (or as saved by the run it resumes)."""

    participant: str | None
    participant_id: str | None
    concurrency: int | None
    selection: Any
    overrides: dict[str, object]
    run_id: str | None = None
    predictions: str | None = None  # a predictions file graded instead of a participant
    script: Path | None = None


# the settings that make a run what it is: a resumed run keeps the recorded ones
RESUME_PINNED = (
    "dataset", "dataset_split", "repo_url_template", "mirror_dir", "recipes_file",
    "setup_strategy", "validate_env", "validation_runs", "image_prefix", "base_python",
    "cpus", "memory", "pids_limit", "disk_limit", "max_tool_calls", "tool_timeout",
    "instance_timeout", "participant_timeout", "max_reply_bytes", "patch_fuzz", "test_timeout",
    "flaky_reruns", "unprivileged_tests", "grade_in_participant_container", "docker_policy",
    "wider_tests", "wider_max_files",
)  # fmt: skip


def resumed(plan: RunPlan, run_dir: Path) -> RunPlan:
    """``plan`` completed from the ``config.json`` of the run it continues: the recorded
    dataset, mirrors, recipes, strategy and limits, whatever today's environment says. A
    setting given explicitly (option, environment, file) that differs is an error."""
    from orchestrator.dataset.instances import Selection
    from orchestrator.settings import setting_sources

    if not (run_dir / "config.json").exists():
        raise UserError(f"{run_dir} is not a run directory.", "pass the path `run` printed.")
    saved = read_json(run_dir / "config.json")
    recorded = saved.get("settings", {})
    pinned = {name: recorded[name] for name in RESUME_PINNED if name in recorded}
    given = {name for name, source in setting_sources().items() if source in ("env", "file")} | set(
        plan.overrides
    )
    if given & set(pinned):
        current = load_settings(**plan.overrides).flat()
        for name in sorted(given & set(pinned)):
            if not _same(current.get(name), pinned[name]):
                raise UserError(
                    f"--resume: {name} is {current.get(name)!r} here but the run was started "
                    f"with {pinned[name]!r}.",
                    f"leave {name} out (unset SWE_GREEN_{name.upper()}) to resume the same run, "
                    "or start a new run.",
                )
    saved.setdefault("participant", _requested_participant(saved))
    if plan.participant and saved.get("participant") and plan.participant != saved["participant"]:
        raise UserError(
            f"--resume: the participant is {plan.participant!r} here but the run was started "
            f"with {saved['participant']!r}.",
            "leave --participant out to resume the same run, or start a new run.",
        )
    return RunPlan(
        participant=plan.participant or saved.get("participant"),
        participant_id=plan.participant_id or saved.get("participant_id"),
        concurrency=plan.concurrency or saved.get("concurrency"),
        selection=Selection(**_recorded_selection(saved)),
        overrides={**pinned, **saved.get("settings_overrides", {}), **plan.overrides},
        run_id=saved["run_id"],
        predictions=plan.predictions or saved.get("predictions"),
        script=plan.script or (Path(saved["script"]) if saved.get("script") else None),
    )


def _recorded_selection(saved: dict[str, Any]) -> dict[str, Any]:
    """The selection a run was started with: as recorded, else (an assessment's run) the
    instances it chose; never nothing, which would be the whole dataset."""
    if "selection" in saved:
        return dict(saved["selection"])
    if saved.get("instances"):
        return {"ids": list(saved["instances"])}
    return {}


def _requested_participant(saved: dict[str, Any]) -> str | None:
    """An assessment's participant URL, from the request it recorded."""
    participants = (saved.get("request") or {}).get("participants") or {}
    return next(iter(participants.values()), None) if isinstance(participants, dict) else None


def _same(here: object, recorded: object) -> bool:
    if here == recorded:
        return True
    try:
        return float(here) == float(recorded)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(here) == str(recorded)
