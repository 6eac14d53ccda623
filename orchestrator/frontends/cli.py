"""The ``swe-green`` command line."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from orchestrator.errors import UserError
from orchestrator.log import configure_logging
from orchestrator.settings import Settings, config_file, load_settings

app = typer.Typer(
    help="Self-hosted SWE-bench Verified evaluator (AgentBeats green agent).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
images_app = typer.Typer(help="Base images.", no_args_is_help=True)
sandbox_app = typer.Typer(help="This tool's containers.", no_args_is_help=True)
app.add_typer(images_app, name="images")
app.add_typer(sandbox_app, name="sandbox")

console = Console()
err_console = Console(stderr=True)


def settings() -> Settings:
    return load_settings()


@app.callback()
def _root(
    log_json: Annotated[
        bool, typer.Option("--log-json", help="Log JSON lines to stderr (runs too).")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Runs: log lines on stderr too.")
    ] = False,
) -> None:
    s = settings()
    json_lines = log_json or s.run.log_json
    configure_logging(json_lines=json_lines, level=s.run.log_level, verbose=verbose)


@app.command("config")
def config_cmd(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also each setting's meaning.")
    ] = False,
) -> None:
    """Print every setting: its value and where the value comes from."""
    from orchestrator.settings import SECRETS, setting_names, setting_sources

    s = settings()
    sources = setting_sources()
    width = max(console.width, 40)
    name_width = max(len(name) for name in setting_names())
    for name, field, value in s.items():
        if name in SECRETS and value:
            value = "***"
        source = sources.get(name, "default")
        room = width - name_width - len(source) - 4
        shown = _shorten("-" if value is None else str(value), room)
        line = Text.assemble(
            (name.ljust(name_width), "bold"), "  ", shown.ljust(room), "  ", (source, "dim")
        )
        console.print(line, highlight=False, no_wrap=True, crop=True)
        if verbose:
            meaning = f"{field.description or ''} [SWE_GREEN_{name.upper()}]"
            console.print(Padding(Text(meaning, style="italic"), (0, 0, 0, 4)), highlight=False)
    console.print("sources: env = SWE_GREEN_<NAME>; default = built in", style="dim")
    console.print("file = " + _shorten(str(config_file()), width - 7), style="dim", highlight=False)


def _shorten(text: str, room: int) -> str:
    """``text`` in ``room`` characters: its start and end around an ellipsis when longer."""
    if len(text) <= room:
        return text
    head = max(room - 1, 0) // 2
    return text[:head] + "…" + text[len(text) - (max(room - 1, 0) - head) :]


@images_app.command("build")
def images_build(
    python: Annotated[
        list[str] | None, typer.Option("--python", help="Python version(s): 3.9, 3.11, 3.13.")
    ] = None,
    method: Annotated[
        str, typer.Option(help="auto, debootstrap (offline) or dockerfile (needs a registry).")
    ] = "auto",
    force: Annotated[bool, typer.Option(help="Rebuild images that exist.")] = False,
) -> None:
    """Build the base images (skips those that exist)."""
    from orchestrator.environments.images import SUITES, build_base_images
    from orchestrator.sandbox.factory import backend_from

    if method not in ("auto", "debootstrap", "dockerfile"):
        raise UserError(f"Unknown --method {method}.", "use auto, debootstrap or dockerfile.")
    build_base_images(
        backend_from(settings()),
        settings().environment.image_prefix,
        python or list(SUITES),
        method=method,  # type: ignore[arg-type]
        force=force,
        progress=lambda line: console.print(f"[cyan]images[/] {line}"),
    )


@images_app.command("ls")
def images_ls() -> None:
    """List this tool's images (base, environment cache, snapshots)."""
    from orchestrator.housekeeping import list_images
    from orchestrator.sandbox.factory import backend_from
    from orchestrator.sandbox.models import LABEL_KIND

    table = Table("image", "kind", "size (MB)", "created")
    for image in list_images(backend_from(settings())):
        tag = image.tags[0] if image.tags else image.short_id
        size = image.size / 1e6
        created = image.created[:19]
        table.add_row(tag, image.labels.get(LABEL_KIND, ""), f"{size:.0f}", created)
    console.print(table)


@sandbox_app.command("ls")
def sandbox_ls(run: Annotated[str | None, typer.Option(help="Only this run.")] = None) -> None:
    """List this tool's containers with their run and instance."""
    from orchestrator.housekeeping import list_containers
    from orchestrator.sandbox.factory import backend_from

    table = Table("container", "status", "run", "instance", "role", "created")
    for column in table.columns:
        column.overflow = "fold"
    for info in list_containers(backend_from(settings()), run_id=run):
        table.add_row(
            info.name, info.status, info.run_id, info.instance_id, info.role, info.created[:19]
        )
    console.print(table)


@sandbox_app.command("check")
def sandbox_check(
    check: Annotated[
        list[str] | None, typer.Option(help="Only this check (repeatable); all by default.")
    ] = None,
    registry: Annotated[
        str | None, typer.Option(help="host:port of a registry to check push and pull against.")
    ] = None,
) -> None:
    """Run the sandbox conformance suite against the configured backend and base image."""
    import uuid

    from orchestrator.sandbox.conformance import CHECKS, Target, run_checks
    from orchestrator.sandbox.factory import backend_from
    from orchestrator.sandbox.local import LOCAL_IMAGE

    s = settings()
    unknown = sorted(set(check or []) - set(CHECKS))
    if unknown:
        raise UserError(f"No check named {', '.join(unknown)}.", f"use one of {', '.join(CHECKS)}.")
    backend = backend_from(s)
    image = LOCAL_IMAGE if backend.name == "local" else s.environment.base_image()
    run_id = f"check-{uuid.uuid4().hex[:8]}"
    target = Target(backend, image, run_id, registry=registry,
                    image_repository=f"{s.environment.image_prefix}-check/conformance")  # fmt: skip
    table = Table("check", "outcome", "s", "message")
    results = run_checks(target, check)
    for r in results:
        colour = {"passed": "green", "failed": "red", "unsupported": "yellow"}[r.outcome]
        table.add_row(r.name, f"[{colour}]{r.outcome}[/]", f"{r.seconds:.1f}", r.message)
    console.print(table)
    if any(r.outcome == "failed" for r in results):
        raise typer.Exit(1)


@app.command("inspect")
def inspect_cmd(
    ref: Annotated[str, typer.Argument(help="Instance id, container name or container id.")],
    shell: Annotated[str, typer.Option(help="Shell to open.")] = "bash",
) -> None:
    """Open an interactive shell in a kept container."""
    from orchestrator.housekeeping import find_container
    from orchestrator.sandbox.factory import backend_from

    backend = backend_from(settings())
    info, how = find_container(backend, ref)
    err_console.print(f"Found {info.name} ({info.status}, run {info.run_id}) by {how}.")
    if info.status != "running":
        backend.start_container(info.id)
    argv = ["docker", "exec", "-it", "-w", "/testbed", info.id, shell]
    if not shutil.which("docker"):
        raise UserError("The docker command is not installed.", f"run: {' '.join(argv)}")
    if not sys.stdin.isatty():
        argv.remove("-it")
        argv.insert(2, "-i")
    os.execvp("docker", argv)


@app.command("gc")
def gc_cmd(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would go.")] = False,
    run: Annotated[str | None, typer.Option(help="Only this run's containers/images.")] = None,
    all_images: Annotated[
        bool, typer.Option("--all-images", help="Also the environment cache and base images.")
    ] = False,
) -> None:
    """Remove this tool's leftover containers and snapshot images."""
    from orchestrator.housekeeping import EPHEMERAL_KINDS, gc
    from orchestrator.sandbox.factory import backend_from

    kinds = (*EPHEMERAL_KINDS, "env", "base") if all_images else EPHEMERAL_KINDS
    containers, images = gc(
        backend_from(settings()), dry_run=dry_run, run_id=run, image_kinds=kinds
    )
    verb = "would remove" if dry_run else "removed"
    console.print(f"{verb} {len(containers)} container(s), {len(images)} image(s)")
    for name in containers + images:
        console.print(f"  {name}")


def _register_optional_commands() -> None:
    """Command groups that live in their own modules."""
    from importlib import import_module

    for module in ("commands",):
        try:
            mod = import_module(f".{module}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{module}":
                raise
            continue
        mod.register(app)


def main() -> None:
    """Entry point: user errors print one line, never a traceback."""
    _register_optional_commands()
    try:
        app()
    except UserError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
