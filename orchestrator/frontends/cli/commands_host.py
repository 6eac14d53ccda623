"""``swe-green config``, ``images``, ``sandbox`` and ``gc``: this host's settings, base
images and containers (:mod:`.app` registers them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import console

if TYPE_CHECKING:
    from orchestrator.settings import Settings


def settings() -> Settings:
    from orchestrator.settings import load_settings

    return load_settings()


def config_cmd(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also each setting's meaning.")
    ] = False,
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown", help="Print every setting's default and meaning as a Markdown table."
        ),
    ] = False,
) -> None:
    """Print every setting: its value and where the value comes from."""
    from rich.padding import Padding
    from rich.text import Text

    from orchestrator.settings import (
        SECRETS,
        config_file,
        setting_names,
        setting_sources,
        settings_table,
    )
    from orchestrator.settings.describe import default_text

    if markdown:
        print(settings_table(), end="")
        return
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
            default = "unset" if field.default is None else default_text(field.default)
            meaning = f"{field.description or ''} [SWE_GREEN_{name.upper()}, default {default}]"
            console.print(Padding(Text(meaning, style="italic"), (0, 0, 0, 4)), highlight=False)
    console.print("sources: env = SWE_GREEN_<NAME>; default = built in", style="dim")
    console.print("file = " + _shorten(str(config_file()), width - 7), style="dim", highlight=False)


def _shorten(text: str, room: int) -> str:
    """``text`` in ``room`` characters: its start and end around an ellipsis when longer."""
    if len(text) <= room:
        return text
    head = max(room - 1, 0) // 2
    return text[:head] + "…" + text[len(text) - (max(room - 1, 0) - head) :]


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
    from orchestrator.sandbox.factory import backend_from
    from orchestrator.setup.images import SUITES, build_base_images

    if method not in ("auto", "debootstrap", "dockerfile"):
        raise UserError(f"Unknown --method {method}.", "use auto, debootstrap or dockerfile.")
    s = settings()
    build_base_images(
        backend_from(s),
        s.environment.image_prefix,
        python or list(SUITES),
        method=method,  # type: ignore[arg-type]
        force=force,
        progress=lambda line: console.print(f"[cyan]images[/] {line}", highlight=False),
        record_dir=s.storage.data_dir,
    )


def images_ls() -> None:
    """List this tool's images (base, environment cache, snapshots)."""
    from rich.table import Table

    from orchestrator.housekeeping.inventory import list_images
    from orchestrator.sandbox.factory import backend_from
    from orchestrator.sandbox.models import LABEL_KIND

    table = Table("image", "kind", "size (MB)", "created")
    for image in list_images(backend_from(settings())):
        tag = image.tags[0] if image.tags else image.short_id
        size = image.size / 1e6
        created = image.created[:19]
        table.add_row(tag, image.labels.get(LABEL_KIND, ""), f"{size:.0f}", created)
    console.print(table)


def sandbox_ls(run: Annotated[str | None, typer.Option(help="Only this run.")] = None) -> None:
    """List this tool's containers with their run and instance."""
    from orchestrator.frontends.cli.tables import plain_table
    from orchestrator.housekeeping.inventory import list_containers
    from orchestrator.sandbox.factory import backend_from

    found = list_containers(backend_from(settings()), run_id=run)
    # the name is swe-green-<run>-<instance>-<role>: on a narrow terminal the run and
    # instance columns (whole, never folded) say it, the role is cut first, then the time
    wide, roomy = console.width >= 140, console.width >= 100
    table = plain_table()
    if wide:
        table.add_column("container", no_wrap=True, min_width=_longest(found, "name"))
    table.add_column("instance", no_wrap=True, min_width=_longest(found, "instance_id"))
    table.add_column("run", no_wrap=True, min_width=_longest(found, "run_id"))
    table.add_column("status", no_wrap=True, min_width=_longest(found, "status"))
    table.add_column("role", no_wrap=True, overflow="ellipsis")
    if roomy:
        table.add_column("created", no_wrap=True, overflow="ellipsis")
    for info in found:
        created = info.created[:19].replace("T", " ")
        table.add_row(
            *([info.name] if wide else []), info.instance_id, info.run_id, info.status,
            info.role, *([created if wide else created[5:16]] if roomy else []),
        )  # fmt: skip
    console.print(table)
    if found and not wide:
        console.print("Open one with `swe-green inspect INSTANCE --run RUN`.", style="dim")


def _longest(found: list[Any], field: str) -> int:
    return max((len(getattr(info, field)) for info in found), default=0)


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

    from rich.table import Table

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


def gc_cmd(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would go.")] = False,
    run: Annotated[str | None, typer.Option(help="Only this run's containers/images.")] = None,
    all_images: Annotated[
        bool, typer.Option("--all-images", help="Also the environment cache and base images.")
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", metavar="AGE",
            help="Only what was created at least AGE ago: 30m, 12h, 7d.",
        ),
    ] = None,
) -> None:  # fmt: skip
    """Remove leftover containers and snapshot images; never what a live run holds.

    What a live run, validation, assessment or inspect shell holds (its lease) stays, and so
    does every container of a run with a running container (unless --run names it); a
    crashed run's lease expires, so its leftovers go."""
    from orchestrator.housekeeping.gc import EPHEMERAL_KINDS, gc
    from orchestrator.sandbox.factory import backend_from

    age = parse_age(older_than) if older_than is not None else None
    kinds = (*EPHEMERAL_KINDS, "env", "base") if all_images else EPHEMERAL_KINDS
    plan = gc(
        backend_from(settings()), data_dir=settings().storage.data_dir, dry_run=dry_run, run_id=run,
        image_kinds=kinds, older_than=age,
    )  # fmt: skip
    verb = "would remove" if dry_run else "removed"
    console.print(
        f"{verb} {len(plan.containers)} container(s), {len(plan.images)} image(s)"
        + (f", {len(plan.networks)} idle network(s)" if plan.networks else "")
    )
    for name in plan.containers + plan.images + plan.networks:
        console.print(f"  {name}")
    if plan.spared:
        console.print(f"in use, left alone: {len(plan.spared)}")
        for line in plan.spared:
            console.print(f"  {line}", highlight=False)


def parse_age(text: str) -> float:
    """``30m``, ``12h``, ``7d``, ``90s`` (or plain seconds) as seconds."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise UserError(f"--older-than {text!r} is not an age.", "write it like 30m, 12h or 7d.")
    scale = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
    return float(match[1]) * scale
