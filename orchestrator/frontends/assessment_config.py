"""The ``config`` object of an assessment request (:mod:`.assessment`): its keys, their
synonyms in the AgentBeats workflows, the bounds of every number, and which keys become
settings."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from orchestrator.dataset.instances import parse_shard
from orchestrator.errors import UserError
from orchestrator.settings import setting_choices
from orchestrator.settings.environment import SetupStrategy

# upper bounds of the config's numbers (the lower bound is 1 for counts, > 0 for seconds)
LIMITS: dict[str, float] = {
    "count": 100_000,
    "num_shards": 10_000,
    "concurrency": 64,
    "instance_timeout": 86_400,  # 24 h
    "tool_timeout": 3_600,
    "test_timeout": 14_400,  # 4 h
    "participant_timeout": 3_600,
    "max_tool_calls": 10_000,
}


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


def _finite(value: Any) -> Any:
    value = _not_bool(value)
    try:
        number = float(value) if isinstance(value, int | float | str) else None
    except (ValueError, OverflowError):
        return value  # not a number: the type check says so
    if number is not None and not math.isfinite(number):
        raise ValueError("expected a finite number, not infinity or NaN")
    return value


def _valid_shard(value: str) -> str:
    try:
        parse_shard(value)
    except UserError as exc:
        raise ValueError(str(exc)) from None
    return value


# a field is ``Annotated[_Count, Le(its limit), _NOT_BOOL]`` (nested ``Annotated`` flattens;
# the validator comes last so that the bounds stay those of the number's own schema)
_Count = Annotated[int, Ge(1)]


_Seconds = Annotated[float, Gt(0)]


_NOT_BOOL, _FINITE = BeforeValidator(_not_bool), BeforeValidator(_finite)


class AssessmentConfig(BaseModel):
    """The ``config`` object of a request. Every key is optional."""

    model_config = ConfigDict(extra="forbid")

    instance_ids: list[str] | None = Field(
        None, description="Exact instance ids: a list, or one comma-separated string."
    )
    pattern: str | None = Field(None, description="fnmatch glob on instance_id, e.g. 'django__*'.")
    repo: str | None = Field(None, description="Only this repository ('owner/name' or 'name').")
    count: Annotated[_Count, Le(int(LIMITS["count"])), _NOT_BOOL] | None = Field(
        None,
        description="Keep the first N selected instances; -1 = all "
        "(synonyms: num_instances, max_rows).",
    )
    shard: Annotated[str, AfterValidator(_valid_shard)] | None = Field(
        None, description="'i/n': the i-th (1-based) of n near-equal slices of the selection."
    )
    shard_index: Annotated[int, Ge(0), BeforeValidator(_not_bool)] | None = Field(
        None, description="0-based shard index (with num_shards; the workflows' form of shard)."
    )
    num_shards: Annotated[_Count, Le(int(LIMITS["num_shards"])), _NOT_BOOL] | None = Field(
        None, description="Number of shards (with shard_index)."
    )
    concurrency: Annotated[_Count, Le(int(LIMITS["concurrency"])), _NOT_BOOL] | None = Field(
        None,
        description="Instances at once, capped at what the green agent's host allows "
        "(synonym: max_concurrent_rows).",
    )
    setup_strategy: SetupStrategy | None = Field(
        None, description=f"Environment setup: {setting_choices('setup_strategy')}."
    )
    instance_timeout: Annotated[_Seconds, Le(LIMITS["instance_timeout"]), _FINITE] | None = Field(
        None, description="Seconds for the participant per instance."
    )
    tool_timeout: Annotated[_Seconds, Le(LIMITS["tool_timeout"]), _FINITE] | None = Field(
        None, description="Seconds per tool call."
    )
    test_timeout: Annotated[_Seconds, Le(LIMITS["test_timeout"]), _FINITE] | None = Field(
        None, description="Seconds for one test run."
    )
    participant_timeout: Annotated[_Seconds, Le(LIMITS["participant_timeout"]), _FINITE] | None = (
        Field(None, description="Seconds to wait for one reply from the participant.")
    )
    max_tool_calls: Annotated[_Count, Le(int(LIMITS["max_tool_calls"])), _NOT_BOOL] | None = Field(
        None, description="Tool calls per instance."
    )
    validate_env: bool | None = Field(
        None, alias="validate", description="Validate each instance's environment first."
    )

    @field_validator("instance_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part for part in re.split(r"[,\s]+", value) if part]
        if value == []:
            raise ValueError("no instance id given")
        return value

    @field_validator("count", mode="before")
    @classmethod
    def _minus_one_is_all(cls, value: Any) -> Any:
        """``-1`` (the workflows' "all") is no limit."""
        if not isinstance(value, bool) and isinstance(value, int | float) and value == -1:
            return None
        return value

    def effective_shard(self) -> str | None:
        """``shard``, or ``shard_index``/``num_shards`` as ``"i/n"`` (1-based)."""
        if self.shard is not None:
            return self.shard
        if self.num_shards is not None:
            return f"{(self.shard_index or 0) + 1}/{self.num_shards}"
        return None


# synonyms accepted for a key (not two spellings of one key at once)
SYNONYMS = {
    "num_instances": "count",
    "max_rows": "count",
    "max_concurrent_rows": "concurrency",
}


# keys as a requester writes them: aliases where a field has one
CONFIG_KEYS: tuple[str, ...] = (
    *(field.alias or name for name, field in AssessmentConfig.model_fields.items()),
    *SYNONYMS,
)


# config keys that become Settings fields (request name -> settings name)
SETTINGS_KEYS = {
    "concurrency": "concurrency",
    "setup_strategy": "setup_strategy",
    "instance_timeout": "instance_timeout",
    "tool_timeout": "tool_timeout",
    "test_timeout": "test_timeout",
    "participant_timeout": "participant_timeout",
    "max_tool_calls": "max_tool_calls",
    "validate_env": "validate_env",
}
