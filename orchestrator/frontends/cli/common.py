"""What the CLI's commands share: the consoles, the selection options, settings, starting a
run."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.setting_help import option_help

if TYPE_CHECKING:
    from rich.console import Console

    from orchestrator.context.run_context import RunContext
    from orchestrator.sandbox import SandboxBackend
    from orchestrator.settings import Settings


# the width of output that goes to no terminal and is given no COLUMNS: lines are not wrapped
# (a name or a path a script greps for stays on one line)
UNWRAPPED = 10_000


class _Console:
    """A rich console, made on first use (importing rich is not free: a usage error does not
    pay for it) and again when COLUMNS changed since.

    Its width is COLUMNS when set, else the terminal's; output that goes to no terminal
    (a pipe, a file) is neither wrapped nor cut, and a table draws no box rules there."""

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._made: tuple[tuple[object, ...], Console] | None = None

    def _console(self) -> Console:
        # keyed by COLUMNS alone: rich writes to whatever sys.stdout is at the time (a live
        # display swaps it for its own while it runs)
        stream = sys.stderr if self._stderr else sys.stdout
        key = (os.environ.get("COLUMNS"),)
        if self._made is None or self._made[0] != key:
            from rich.console import Console

            terminal = stream.isatty()
            columns = os.environ.get("COLUMNS", "")
            width = int(columns) if columns.isdigit() else None if terminal else UNWRAPPED
            made = Console(stderr=self._stderr, width=width)
            self._made = (key, made)
        return self._made[1]

    def print(self, *objects: object, **options: object) -> None:
        made = self._console()
        if made.width == UNWRAPPED:
            from rich.table import Table

            for table in objects:
                if isinstance(table, Table):
                    table.box = None
        made.print(*objects, **options)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self._console(), name)

    # a rich Live display enters its console (dunder methods are not looked up by __getattr__)
    def __enter__(self) -> Console:
        return self._console().__enter__()

    def __exit__(self, *exc: object) -> None:
        self._console().__exit__(*exc)


console: Console = _Console()  # type: ignore[assignment]
err_console: Console = _Console(stderr=True)  # type: ignore[assignment]


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


def load_settings(**overrides: object) -> Settings:
    """:func:`orchestrator.settings.load_settings`, imported when a command runs."""
    from orchestrator.settings import load_settings as load

    return load(**overrides)


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
    check_base_images(settings, backend)
    return start_run(
        settings, backend, kind=kind, run_id=run_id, run_dir=resume or output,
        config={"source": "cli", **config},
    )  # fmt: skip


def check_base_images(settings: Settings, backend: SandboxBackend) -> None:
    """A Docker run on this host needs a base image (built, or published in a registry);
    without one, a UserError before the run starts (every instance would fail the same way).
    A Ray cluster's nodes have their own images, and the local backend needs none."""
    from orchestrator.setup.images import base_pythons

    if settings.sandbox.backend != "docker" or settings.run.ray_address:
        return
    if not base_pythons(backend, settings.environment):
        raise UserError(
            f"No base image {settings.environment.image_prefix}/base:* is built on this host.",
            "run `swe-green images build --python 3.11`, or set SWE_GREEN_BASE_IMAGE_REGISTRY "
            "to where the base images are published.",
        )


def check_writable(
    settings: Settings, output: Path | None = None, option: str = "--output"
) -> None:
    """``data_dir`` and the run directory's place (``output``, given by ``option``, else
    ``runs_dir``) exist (made if missing) and take files, else a UserError naming the setting
    or the option."""
    _writable(
        settings.storage.data_dir,
        f"the data_dir {settings.storage.data_dir}",
        "set SWE_GREEN_DATA_DIR to a directory you can write to.",
    )
    if output is None:
        _writable(
            settings.storage.runs_dir,
            f"the runs_dir {settings.storage.runs_dir}",
            "set SWE_GREEN_RUNS_DIR to a directory you can write to.",
        )
        return
    _writable(
        output if output.is_dir() else output.parent,
        f"{option} {output}",
        f"pass {option} a directory you can write to.",
    )


def _writable(path: Path, what: str, fix: str) -> None:
    """``path`` exists (made if missing) and takes files, else a UserError naming ``what``."""
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".swe-green-probe-"):
            pass
    except OSError as exc:
        where = "" if what.endswith(str(path)) else f" (in {path})"
        raise UserError(f"Cannot write to {what}{where}: {exc.strerror or exc}.", fix) from None


def present(values: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in values.items() if v is not None}


def read_json(path: Path) -> dict:
    import json

    return json.loads(path.read_text())


def path_in_doc(path: Path | str, page: Path | str) -> str:
    """How a generated page names a path it was given, without this host's layout.

    The rule: relative to the root of the repository that holds the page (the nearest folder
    above ``page`` with a ``.git``), as a command run from that root would take it, when the
    path lies inside that repository; else the path's last name alone (a run directory's
    name, a file's name). Paths are compared as written first (a ``runs`` link in the
    repository stays ``runs/…``), then with links resolved."""
    for absolute in (lambda p: Path(os.path.abspath(p)), lambda p: Path(p).resolve()):
        target = absolute(path)
        root = next((d for d in absolute(page).parents if (d / ".git").exists()), None)
        if root is not None and target.is_relative_to(root):
            return target.relative_to(root).as_posix()
    return Path(os.path.abspath(path)).name
