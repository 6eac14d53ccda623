"""The help of an option that sets a setting, written before the settings are loaded.

An option's help names its setting and shows the setting's default (or its choices, or its
meaning), which live in the settings' models. Importing those costs more than a usage error
may take, so the help holds a mark (``⟨default NAME⟩``, ``⟨choices NAME⟩``,
``⟨meaning NAME⟩``) that :func:`fill` replaces from the models when the help is shown."""

from __future__ import annotations

import re
from typing import Any

MARK = re.compile(r"⟨(default|choices|meaning) (\w+)⟩")


def option_help(name: str, text: str | None = None) -> str:
    """``text (setting NAME, default D).``; with no ``text``, the setting's own meaning."""
    if text is None:
        return f"⟨meaning {name}⟩ (setting {name})."
    return f"{text} (setting {name}, default ⟨default {name}⟩)."


def setting_choices(name: str) -> str:
    """The values a ``Literal`` setting takes, as ``a, b or c``."""
    return f"⟨choices {name}⟩"


def fill(text: str) -> str:
    """``text`` with each mark replaced by what the settings' models say."""
    if "⟨" not in text:
        return text
    from orchestrator.settings import GROUP_OF, GROUPS
    from orchestrator.settings.describe import default_text
    from orchestrator.settings.describe import setting_choices as choices

    def replace(match: re.Match[str]) -> str:
        kind, name = match.groups()
        field = GROUPS[GROUP_OF[name]].model_fields[name]
        if kind == "choices":
            return choices(name)
        if kind == "meaning":
            return (field.description or "").rstrip(".")
        return "unset" if field.default is None else default_text(field.default)

    return MARK.sub(replace, text)


def fill_on_help(command: Any) -> None:
    """``command`` (a click command) fills the marks of its options' help when it shows it."""
    if not any(MARK.search(getattr(p, "help", None) or "") for p in command.params):
        return
    original = command.format_help

    def format_help(ctx: Any, formatter: Any) -> None:
        for param in command.params:
            if getattr(param, "help", None):
                param.help = fill(param.help)
        original(ctx, formatter)

    command.format_help = format_help
