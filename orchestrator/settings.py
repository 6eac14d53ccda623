"""Configuration: environment variables prefixed ``SWE_GREEN_`` and an optional TOML file.

The TOML file is ``swe-green.toml`` in the working directory, or the path in
``SWE_GREEN_CONFIG``. Precedence: explicit arguments > environment > TOML file > defaults.
Every field below is documented with its default; ``swe-green config`` prints them all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .errors import UserError


def _config_file() -> Path:
    return Path(os.environ.get("SWE_GREEN_CONFIG", "swe-green.toml"))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWE_GREEN_", extra="forbid")

    # --- where things live
    data_dir: Path = Field(
        Path.home() / ".cache" / "swe-green",
        description="Host cache: repository mirrors, locks.",
    )
    runs_dir: Path = Field(Path("runs"), description="Where run directories are written.")

    # --- instances (phase 0)
    dataset: str = Field(
        "princeton-nlp/SWE-bench_Verified",
        description="Hugging Face dataset name, or a local .jsonl/.json/.parquet file or dir.",
    )
    dataset_split: str = Field("test", description="Dataset split to load.")

    # --- repositories (phase 1)
    repo_url_template: str = Field(
        "https://github.com/{repo}.git",
        description="Clone URL; {repo}=owner/name, {owner}, {name}, {owner_name}=owner__name.",
    )
    mirror_dir: Path | None = Field(
        None,
        description="Local directory of bare mirrors named owner__name.git; overrides the URL.",
    )

    # --- environment setup (phases 2-4)
    recipes_file: Path | None = Field(
        None, description="Extra recipes (JSON list of Recipe objects) that override shipped ones."
    )
    setup_strategy: Literal["auto", "recipe", "llm"] = Field(
        "auto", description="auto tries recipe, then llm (when an API key is set)."
    )
    validate_env: bool = Field(True, description="Validate each instance's environment first.")
    fetch_python: bool = Field(
        False,
        description="Hosts with internet: `uv python install` a recipe's exact Python when no "
        "base image has it (falls back to the nearest base image Python).",
    )
    anthropic_api_key: str | None = Field(None, description="API key for the llm strategy.")
    anthropic_base_url: str | None = Field(None, description="Messages API base URL override.")
    setup_model: str = Field("claude-sonnet-4-5", description="Model of the LLM setup agent.")
    setup_max_turns: int = Field(40, description="LLM setup agent: max turns.")
    setup_max_tokens: int = Field(400_000, description="LLM setup agent: max total tokens.")
    setup_timeout: float = Field(1800, description="LLM setup agent: wall time limit, seconds.")
    install_timeout: float = Field(2400, description="Recipe install commands: timeout, s.")

    # --- images
    image_prefix: str = Field("swe-green", description="Repository prefix of the tool's images.")
    base_python: str = Field("3.11", description="Default base image Python (3.9/3.11/3.13).")

    # --- sandbox limits
    cpus: float = Field(2.0, description="CPUs per instance container.")
    memory: str = Field("6g", description="Memory limit per instance container.")
    pids_limit: int = Field(2048, description="Max processes per instance container.")
    exec_output_limit: int = Field(
        1_000_000, description="Bytes of stdout/stderr kept per exec; the rest is cut."
    )
    keep_containers: Literal["on_failure", "always", "never"] = Field(
        "on_failure", description="Which participant containers stay for inspection."
    )

    # --- participant (phase 5)
    max_tool_calls: int = Field(250, description="Tool calls per instance.")
    tool_timeout: float = Field(180, description="Seconds per tool call.")
    instance_timeout: float = Field(3600, description="Seconds for the participant per instance.")
    participant_timeout: float = Field(
        900, description="Seconds to wait for one reply from the participant."
    )

    # --- grading (phases 6-7)
    patch_fuzz: int = Field(3, description="patch -p1 --fuzz=N as the last apply strategy.")
    test_timeout: float = Field(1800, description="Seconds for one test run.")
    grade_in_participant_container: bool = Field(
        False,
        description="Grade in the participant's container instead of a fresh one "
        "(unsafe for untrusted participants: whatever they planted there runs in the tests).",
    )
    unprivileged_tests: bool = Field(
        False,
        description="Run the tests as an unprivileged user that can only create files in the "
        "repository (on for `swe-green demo`; not yet verified on every real test suite).",
    )

    # --- run
    concurrency: int | None = Field(
        None, description="Instances at once; default from the host's cores and memory."
    )
    log_json: bool = Field(False, description="Log JSON lines instead of console text.")
    log_level: str = Field("INFO", description="Log level.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_config_file())
        return (init_settings, env_settings, toml)

    def anthropic_key(self) -> str | None:
        """The API key from settings, or the SDK's usual ANTHROPIC_API_KEY."""
        return self.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")

    def base_image(self, python: str | None = None) -> str:
        return f"{self.image_prefix}/base:py{python or self.base_python}"


def load_settings(**overrides: object) -> Settings:
    """Settings with explicit overrides (``None`` values are ignored).

    An invalid value or an unknown key becomes a one-line UserError naming it.
    """
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(part) for part in first["loc"]) or "?"
        problem = (
            f"Unknown setting {name!r}."
            if first["type"] == "extra_forbidden"
            else f"Invalid setting {name}: {first['msg']} (got {first.get('input')!r})."
        )
        raise UserError(
            problem,
            f"fix SWE_GREEN_{name.upper()} or the key {name} in {_config_file()}; "
            "`swe-green config` lists every setting.",
        ) from None
