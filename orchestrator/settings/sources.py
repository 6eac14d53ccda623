"""Where settings come from: ``SWE_GREEN_<NAME>`` environment variables and the TOML file,
each setting by its flat name whatever its group."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource, TomlConfigSettingsSource

from orchestrator.settings.groups import GROUP_OF, GROUPS

ENV_PREFIX = "SWE_GREEN_"


def config_file() -> Path:
    """The TOML settings file (it need not exist)."""
    return Path(os.environ.get("SWE_GREEN_CONFIG", "swe-green.toml"))


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Flat setting names (``cpus``) put into their groups (``sandbox.cpus``); a group given
    whole (a dict, or a TOML table) is merged, each of its names into the group that owns it
    (a table written before a setting moved to another component still works); unknown names
    stay for validation to name."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        if key in GROUPS and isinstance(value, dict):
            for name, item in value.items():
                nested.setdefault(GROUP_OF.get(name, key), {})[name] = item
        elif key in GROUP_OF:
            nested.setdefault(GROUP_OF[key], {})[key] = value
        else:
            nested[key] = value
    return nested


class FlatEnvSource(PydanticBaseSettingsSource):
    """``SWE_GREEN_<NAME>`` for every setting, whatever its group."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        env = {key.upper(): value for key, value in os.environ.items()}
        names = {f"{ENV_PREFIX}{name.upper()}": name for name in GROUP_OF}
        return nest({names[key]: value for key, value in env.items() if key in names})


class NestedTomlSource(TomlConfigSettingsSource):
    def __call__(self) -> dict[str, Any]:
        return nest(super().__call__())


def setting_names() -> list[str]:
    """Every setting's flat name, in documented order."""
    return list(GROUP_OF)


def setting_sources() -> dict[str, str]:
    """Where each setting that is not a default comes from: ``env`` or ``file`` (the TOML
    file). Explicit arguments are not seen here."""
    import tomllib

    env_names = {key.upper() for key in os.environ}
    sources: dict[str, str] = {}
    path = config_file()
    try:
        in_file = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, tomllib.TOMLDecodeError):
        in_file = {}
    in_file_names = {
        k for group in nest(in_file).values() if isinstance(group, dict) for k in group
    }
    for name in GROUP_OF:
        if f"{ENV_PREFIX}{name.upper()}" in env_names:
            sources[name] = "env"
        elif name in in_file_names:
            sources[name] = "file"
    return sources
