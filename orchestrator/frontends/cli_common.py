"""What the CLI's commands share: the consoles, the selection options, settings, starting a
run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from orchestrator.context.run_context import RunContext
from orchestrator.errors import UserError
from orchestrator.settings import Settings, option_help

console = Console()
err_console = Console(stderr=True)


def _check_count(value: int | None) -> int | None:
    """``--count``: a positive N, or -1 for all."""
    if value is None or value == -1:
        return None
    if value < 1:
        raise typer.BadParameter(f"{value} is not a count: pass N >= 1, or -1 for all.")
    return value


def _check_shard(value: str | None) -> str | None:
    """``--shard``: i/n with 1 <= i <= n."""
    from orchestrator.dataset.instances import parse_shard

    if value is None:
        return None
    try:
        parse_shard(value)
    except UserError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


def check_concurrency(value: int | None) -> int | None:
    """``--concurrency``: at least 1 (unset: from the host)."""
    if value is not None and value < 1:
        raise typer.BadParameter(f"{value} instances at once: pass 1 or more.")
    return value


Ids = Annotated[
    list[str] | None, typer.Option("--id", "--instance", help="Instance id (repeatable).")
]
Pattern = Annotated[str | None, typer.Option(help="fnmatch pattern on instance ids.")]
Repo = Annotated[str | None, typer.Option(help="Only this repository (owner/name or name).")]
Count = Annotated[
    int | None,
    typer.Option(help="The first N instances of the selection (-1: all).", callback=_check_count),
]
Shard = Annotated[
    str | None,
    typer.Option(help="Shard i/n of the selection (1-based), e.g. 2/5.", callback=_check_shard),
]
Dataset = Annotated[
    str | None,
    typer.Option(
        help=option_help(
            "dataset",
            "Dataset name or alias (verified, full, lite), local .jsonl/.parquet "
            "file, or SWE-bench 5.x task repository (directory or git URL)",
        )
    ),
]
Concurrency = Annotated[
    int | None,
    typer.Option(
        help=option_help("concurrency"),
        callback=check_concurrency,
    ),
]


def select_instances(settings: Settings, ids, pattern, repo, count, shard):  # noqa: ANN001, ANN202
    from orchestrator.dataset.instances import Selection, resolve

    return resolve(
        settings, Selection(ids=ids, pattern=pattern, repo=repo, count=count, shard=shard)
    )


def start_cli_run(
    settings: Settings,
    kind: str,
    resume: Path | None,
    output: Path | None,
    run_id: str | None = None,
    **config: object,
) -> RunContext:
    """A run of a CLI command (``run``, ``validate``), new or resumed; see :mod:`.bootstrap`."""
    from orchestrator.run.bootstrap import start_run
    from orchestrator.sandbox.factory import backend_from

    run_id = run_id or (resume.name if resume else None)
    backend = backend_from(settings)
    return start_run(
        settings, backend, kind=kind, run_id=run_id, run_dir=resume or output,
        config={"source": "cli", **config},
    )  # fmt: skip


def check_writable(settings: Settings, output: Path | None = None) -> None:
    """``data_dir`` and the runs directory (``output``'s parent, else ``runs_dir``) exist
    (made if missing) and take files, else a UserError naming the setting."""
    _writable(settings.storage.data_dir, "data_dir")
    _writable(output.parent if output else settings.storage.runs_dir, "runs_dir")


def _writable(path: Path, setting: str) -> None:
    """``path`` exists (made if missing) and takes files, else a UserError naming ``setting``."""
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".swe-green-probe-"):
            pass
    except OSError as exc:
        raise UserError(
            f"Cannot write to the {setting} {path} ({exc.strerror or exc}).",
            f"set SWE_GREEN_{setting.upper()} to a directory you can write to.",
        ) from None


def present(values: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in values.items() if v is not None}


def read_json(path: Path) -> dict:
    import json

    return json.loads(path.read_text())
