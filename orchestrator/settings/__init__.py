"""Configuration: environment variables prefixed ``SWE_GREEN_`` and an optional TOML file.

The TOML file is ``swe-green.toml`` in the working directory, or the path in
``SWE_GREEN_CONFIG``. Precedence: explicit arguments > environment > TOML file > defaults.

Each component owns its config (as mini-swe-agent's agent, environment and model each own a
``...Config``): one pydantic model per component, every field documented (``description``)
and range-checked, its default written there and nowhere else. :class:`Settings` composes
them, one attribute per component (``settings.grading.test_timeout``); a component that
needs no other passes only its own around (``backend_from`` a :class:`SandboxConfig`, the
setup agent a :class:`SetupAgentConfig`, images an :class:`EnvironmentConfig`). Every
setting keeps one flat name: the environment variable ``SWE_GREEN_<NAME>``, the TOML key
``name`` (a ``[group]`` table works too) and the keyword of :func:`load_settings`.
``swe-green config`` prints them all; :mod:`.describe` makes the CLI's help and the site's
table from the models.

Where the models live: here, one module per component (:mod:`.sandbox`, :mod:`.grading`,
...), not in the components' packages. The settings are the lowest layer of the import
contract (``pyproject.toml``): the run context, the dataset and every phase read
:class:`Settings`, so the models it composes must import nothing above it; a model beside
its component's code would make ``settings`` import upward (and import the component's
package). A component's own model of the same values (the sandbox's ``Limits``, the
participant's ``ParticipantLimits``) takes its defaults from its config
(:func:`.base.default_of`), not from a copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from orchestrator.errors import UserError
from orchestrator.settings.dataset import DatasetConfig
from orchestrator.settings.describe import (
    default_text,
    setting_choices,
    setting_default,
    settings_table,
)
from orchestrator.settings.environment import EnvironmentConfig
from orchestrator.settings.grading import GradingConfig
from orchestrator.settings.groups import GROUP_OF, GROUPS, SECRETS
from orchestrator.settings.housekeeping import HousekeepingConfig
from orchestrator.settings.participant import ParticipantConfig
from orchestrator.settings.repos import RepoConfig
from orchestrator.settings.run import RunConfig
from orchestrator.settings.sandbox import SandboxConfig
from orchestrator.settings.serve import ServeConfig
from orchestrator.settings.setup_agent import SetupAgentConfig
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
from orchestrator.settings.storage import StorageConfig
from orchestrator.settings.validation import ValidationConfig

__all__ = [
    "ENV_PREFIX",
    "GROUPS",
    "GROUP_OF",
    "SECRETS",
    "DatasetConfig",
    "EnvironmentConfig",
    "GradingConfig",
    "HousekeepingConfig",
    "ParticipantConfig",
    "RepoConfig",
    "RunConfig",
    "SandboxConfig",
    "ServeConfig",
    "Settings",
    "SetupAgentConfig",
    "StorageConfig",
    "ValidationConfig",
    "config_file",
    "disk_bytes",
    "load_settings",
    "setting_choices",
    "setting_names",
    "setting_sources",
    "settings_table",
]


class Settings(BaseSettings):
    """Every setting: the components' configs, one attribute each (the keys of ``GROUPS``)."""

    model_config = SettingsConfigDict(extra="forbid")

    storage: StorageConfig = Field(default_factory=StorageConfig)
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    repos: RepoConfig = Field(default_factory=RepoConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    setup_agent: SetupAgentConfig = Field(default_factory=SetupAgentConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    housekeeping: HousekeepingConfig = Field(default_factory=HousekeepingConfig)
    participant: ParticipantConfig = Field(default_factory=ParticipantConfig)
    grading: GradingConfig = Field(default_factory=GradingConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)

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

    An invalid value or an unknown key becomes a one-line UserError naming it, where it came
    from (an option, ``SWE_GREEN_<NAME>`` or the TOML file) and what to do.
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"]]
        name = loc[-1] if len(loc) == 2 and loc[0] in GROUPS else ".".join(loc) or "?"
        problem = (
            f"Unknown setting {name!r}."
            if first["type"] == "extra_forbidden"
            else f"Invalid setting {name}: {first['msg']} (got {first.get('input')!r})."
        )
        raise UserError(problem, _where_to_fix(name, given)) from None


def _where_to_fix(name: str, given: dict[str, object]) -> str:
    """The fix of a bad setting ``name``, told where its value came from."""
    listing = "`swe-green config --verbose` lists every setting and its meaning."
    if name not in GROUP_OF:
        return f"remove {name} from {config_file()} or the call; {listing}"
    default = f"the default ({default_text(setting_default(name))})"
    source = "option" if name in given else setting_sources().get(name)
    if source == "option":
        return f"correct the value given for {name} (an option or argument); {listing}"
    if source == "env":
        variable = f"{ENV_PREFIX}{name.upper()}"
        return f"correct {variable} in the environment, or unset it for {default}; {listing}"
    if source == "file":
        return f"correct the key {name} in {config_file()}, or remove it for {default}; {listing}"
    return f"correct {ENV_PREFIX}{name.upper()} or the key {name} in {config_file()}; {listing}"
