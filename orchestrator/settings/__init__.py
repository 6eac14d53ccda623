"""Configuration: environment variables prefixed ``SWE_GREEN_`` and an optional TOML file.

The TOML file is ``swe-green.toml`` in the working directory, or the path in
``SWE_GREEN_CONFIG``. Precedence: explicit arguments > environment > TOML file > defaults.

Settings are grouped per component (:class:`Settings` holds one model per group, and each
component receives only its group), but every setting keeps its one flat name: the
environment variable ``SWE_GREEN_<NAME>``, the TOML key ``name`` (a ``[group]`` table works
too) and the keyword of :func:`load_settings`. ``swe-green config`` prints them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from orchestrator.errors import UserError
from orchestrator.settings.groups import (
    GROUP_OF,
    GROUPS,
    SECRETS,
    DatasetSettings,
    EnvironmentSettings,
    GradingSettings,
    ParticipantSettings,
    RepoSettings,
    RunSettings,
    SandboxSettings,
    ServeSettings,
    SetupAgentSettings,
    StorageSettings,
)
from orchestrator.settings.sizes import disk_bytes
from orchestrator.settings.sources import (
    ENV_PREFIX,
    FlatEnvSource,
    NestedTomlSource,
    config_file,
    nest,
    setting_names,
    setting_sources,
)

__all__ = [
    "ENV_PREFIX",
    "GROUP_OF",
    "GROUPS",
    "SECRETS",
    "DatasetSettings",
    "EnvironmentSettings",
    "GradingSettings",
    "ParticipantSettings",
    "RepoSettings",
    "RunSettings",
    "SandboxSettings",
    "ServeSettings",
    "Settings",
    "SetupAgentSettings",
    "StorageSettings",
    "config_file",
    "disk_bytes",
    "load_settings",
    "setting_names",
    "setting_sources",
]


class Settings(BaseSettings):
    """Every setting, one model per component's group."""

    model_config = SettingsConfigDict(extra="forbid")

    storage: StorageSettings = Field(default_factory=StorageSettings)
    dataset: DatasetSettings = Field(default_factory=DatasetSettings)
    repos: RepoSettings = Field(default_factory=RepoSettings)
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings)
    setup_agent: SetupAgentSettings = Field(default_factory=SetupAgentSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    participant: ParticipantSettings = Field(default_factory=ParticipantSettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    def __init__(self, **values: Any) -> None:
        super().__init__(**nest(values))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = NestedTomlSource(settings_cls, toml_file=config_file())
        return (init_settings, FlatEnvSource(settings_cls), toml)

    def items(self) -> Iterator[tuple[str, FieldInfo, Any]]:
        """Every setting by its flat name: ``(name, field, value)``, in documented order."""
        for group in GROUPS:
            part = getattr(self, group)
            for name, field in type(part).model_fields.items():
                yield name, field, getattr(part, name)

    def flat(self, *, secrets: bool = True) -> dict[str, Any]:
        """Every setting by its flat name (JSON-ready values); secrets left out if asked."""
        dumped = {k: v for group in self.model_dump(mode="json").values() for k, v in group.items()}
        return {k: v for k, v in dumped.items() if secrets or k not in SECRETS}

    def replace(self, **changes: Any) -> Settings:
        """A copy with some settings (by flat name) changed, validated."""
        groups = {group: getattr(self, group).model_dump() for group in GROUPS}
        for group, values in nest(changes).items():
            if group not in GROUPS:
                raise ValueError(f"unknown setting {group!r}")
            groups[group].update(values)
        return type(self).model_validate(groups)


def load_settings(**overrides: object) -> Settings:
    """Settings with explicit overrides (``None`` values are ignored).

    An invalid value or an unknown key becomes a one-line UserError naming it.
    """
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"]]
        name = loc[-1] if len(loc) == 2 and loc[0] in GROUPS else ".".join(loc) or "?"
        problem = (
            f"Unknown setting {name!r}."
            if first["type"] == "extra_forbidden"
            else f"Invalid setting {name}: {first['msg']} (got {first.get('input')!r})."
        )
        raise UserError(
            problem,
            f"fix SWE_GREEN_{name.upper()} or the key {name} in {config_file()}; "
            "`swe-green config` lists every setting.",
        ) from None
