"""Settings as people read them: a default as text, a setting's choices, the settings table
of the documentation.

Each is made from the components' config models, so a default or a meaning is written once:
a CLI help saying "default 1800" reads it from :class:`~orchestrator.settings.GradingConfig`
(through :mod:`orchestrator.frontends.cli.setting_help`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from orchestrator.settings.groups import GROUP_OF, GROUPS


def default_text(value: Any) -> str:
    """A default as the documentation shows it (``~`` for the home directory)."""
    if isinstance(value, Path) and value.is_relative_to(Path.home()):
        return f"~/{value.relative_to(Path.home())}"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def setting_default(name: str) -> Any:
    """The default of setting ``name`` (its flat name), from its component's model."""
    return GROUPS[GROUP_OF[name]].model_fields[name].default


def setting_choices(name: str) -> str:
    """The values a ``Literal`` setting takes, as ``a, b or c``."""
    choices = [str(c) for c in get_args(GROUPS[GROUP_OF[name]].model_fields[name].annotation)]
    return ", ".join(choices[:-1]) + f" or {choices[-1]}"


def settings_table() -> str:
    """Every setting as a Markdown table (the site's settings page, ``config --markdown``):
    name, default, meaning."""
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    for name, group in GROUP_OF.items():
        field = GROUPS[group].model_fields[name]
        rows.append(f"| `{name}` | {_cell(field.default)} | {field.description} |")
    return "\n".join(rows) + "\n"


def _cell(default: Any) -> str:
    if default is None:
        return "–"
    if isinstance(default, bool):
        return default_text(default)
    if default == "":
        return '""'
    return f"`{default_text(default)}`"
