"""The assessment request the green agent receives over A2A: parsing and validation.

A request is one message whose text is JSON (or a data part holding the same object)::

    {"participants": {"<role>": "<participant A2A URL>"}, "config": {...}}

with exactly one participant. ``config`` is optional; its keys are listed in
:data:`CONFIG_KEYS`, with the AgentBeats workflows' names as synonyms:

- ``shard_index`` (0-based) + ``num_shards``: the 1-based ``shard`` ``"<index+1>/<num_shards>"``;
- ``num_instances`` and ``max_rows``: ``count``, where ``-1`` means all;
- ``max_concurrent_rows``: ``concurrency``.

Unknown keys, at the top level or in ``config``, are ignored and listed in
:attr:`AssessmentRequest.ignored` (the server names them in its messages and the summary),
except a top-level key close to ``participants`` or ``config`` (``confg``, ``Config``) and a
config key one edit away from a selection key (``instance_id``, ``cout``): that request is
rejected with the did-you-mean, never widened to the whole dataset. A known key
with a wrong type or value is rejected with a message naming it. Every number has an upper
bound (:data:`LIMITS`); ``Infinity``/``NaN`` are rejected, and so is a text
that is not plain JSON (too deep, too long, a number with thousands of digits).
Numbers may arrive as floats (A2A data parts carry every number as a double): ``2.0`` is
accepted where a whole number is expected, ``2.5`` is not.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    HttpUrl,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from orchestrator.dataset.instances import Selection, iso_time, parse_shard
from orchestrator.errors import UserError
from orchestrator.frontends.server.request_json import (
    EXAMPLE,
    MAX_REQUEST_CHARS,
    InvalidAssessment,
    json_type,
    loads,
    unfence,
)
from orchestrator.settings import setting_choices
from orchestrator.settings.environment import SetupStrategy

# --------------------------------------------------------------------------- the config


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
    created_after: Annotated[str, AfterValidator(iso_time)] | None = Field(
        None,
        description="Only instances created after this time (ISO 8601, e.g. 2025-06-01): tasks "
        "newer than the participant's training cut-off.",
    )
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
    wider_tests: bool | None = Field(
        None,
        description="Beside each resolved verdict, run the repository's tests beyond the "
        "task's against the gold patch's (regressions reported; the verdict stays).",
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
    "wider_tests": "wider_tests",
}


# --------------------------------------------------------------------------- the request

REQUEST_KEYS = ("participants", "config")


class AssessmentRequest(BaseModel):
    """A validated request: one participant (role -> A2A URL) and the run's configuration."""

    model_config = ConfigDict(extra="forbid")

    participants: dict[str, str]
    config: AssessmentConfig = Field(default_factory=AssessmentConfig)
    # keys the request gave that this benchmark does not know, with a hint each (ignored)
    ignored: list[str] = Field(default_factory=list)

    @property
    def role(self) -> str:
        return next(iter(self.participants))

    @property
    def participant_url(self) -> str:
        return self.participants[self.role]

    def selection(self) -> Selection:
        """Which instances the request picks (dataset order; all of them when it says nothing)."""
        c = self.config
        return Selection(
            ids=c.instance_ids,
            pattern=c.pattern,
            repo=c.repo,
            count=c.count,
            shard=c.effective_shard(),
            created_after=c.created_after,
        )

    def to_settings_overrides(self) -> dict[str, Any]:
        """The Settings fields the request sets (only those it gives)."""
        given = self.config.model_dump(exclude_none=True)
        return {SETTINGS_KEYS[k]: v for k, v in given.items() if k in SETTINGS_KEYS}

    def ignored_text(self) -> str:
        """``Ignored unknown config keys: 'x', 'y' (did you mean 'z'?).`` or ``""``."""
        if not self.ignored:
            return ""
        noun = "key" if len(self.ignored) == 1 else "keys"
        return f"Ignored unknown {noun}: {', '.join(self.ignored)}."


def parse_request(text: str, data: list[Any] | None = None) -> AssessmentRequest:
    """The request in a message: a data part holding an object with ``participants``, else
    the message's text as JSON (a fenced ```json block is unwrapped). InvalidAssessment when
    it is malformed."""
    for item in data or []:
        if isinstance(item, dict) and "participants" in item:
            return validate_request(item)
    body = unfence(text.strip())
    if not body:
        raise InvalidAssessment("The assessment request is empty.", f"send JSON like {EXAMPLE}.")
    if len(body) > MAX_REQUEST_CHARS:
        raise InvalidAssessment(
            f"The assessment request is {len(body):,} characters long; the limit is "
            f"{MAX_REQUEST_CHARS:,}.",
            "send a shorter request (a pattern or a count instead of a very long id list).",
        )
    payload = loads(body)
    return validate_request(payload)


def validate_request(payload: Any) -> AssessmentRequest:
    """Check a decoded request; InvalidAssessment with every problem found, in one line."""
    if not isinstance(payload, dict):
        raise InvalidAssessment(
            f"The assessment request is a JSON {json_type(payload)}, not an object.",
            f"send JSON like {EXAMPLE}.",
        )
    _refuse_misspelt_request_key(payload)
    ignored = _unknown("", payload, REQUEST_KEYS)
    participants = _participants(payload.get("participants"))
    config = payload.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise InvalidAssessment(
            f'"config" is a JSON {json_type(config)}, not an object.',
            f"send an object with some of: {', '.join(CONFIG_KEYS)}.",
        )
    _refuse_misspelt_selection(config)
    ignored += _unknown("config.", config, CONFIG_KEYS)
    config = {k: v for k, v in config.items() if k in CONFIG_KEYS and v is not None}
    for synonym, key in SYNONYMS.items():
        if synonym in config:
            given = [k for k in (key, *SYNONYMS) if k in config and SYNONYMS.get(k, k) == key]
            if len(given) > 1:
                raise InvalidAssessment(
                    f"The config gives {' and '.join(repr(k) for k in given)}, "
                    "which mean the same.",
                    "give only one of them.",
                )
            config[key] = config.pop(synonym)
    try:
        parsed = AssessmentConfig.model_validate(config)
    except ValidationError as exc:
        raise InvalidAssessment(
            f"Invalid config: {_describe(exc)}.", "correct these values and send it again."
        ) from None
    _check_shards(parsed)
    return AssessmentRequest(participants=participants, config=parsed, ignored=ignored)


def _check_shards(config: AssessmentConfig) -> None:
    index, total = config.shard_index, config.num_shards
    if config.shard is not None and (index is not None or total is not None):
        raise InvalidAssessment(
            'The config gives "shard" and "shard_index"/"num_shards", which mean the same.',
            "give only one of them.",
        )
    if index is not None and total is None:
        raise InvalidAssessment(
            'The config gives "shard_index" without "num_shards".', "give both, or neither."
        )
    if index is not None and total is not None and index >= total:
        raise InvalidAssessment(
            f"Invalid config: shard_index {index} is out of range for num_shards {total}.",
            "shard_index is 0-based: 0 <= shard_index < num_shards.",
        )


_URL = TypeAdapter(HttpUrl)


def _participants(value: Any) -> dict[str, str]:
    fix = 'name exactly one participant: "participants": {"<role>": "<A2A URL>"}.'
    if value is None:
        raise InvalidAssessment('The assessment request has no "participants".', fix)
    if not isinstance(value, dict):
        raise InvalidAssessment(f'"participants" is a JSON {json_type(value)}, not an object.', fix)
    if not value:
        raise InvalidAssessment('"participants" is empty.', fix)
    if len(value) > 1:
        raise InvalidAssessment(
            f"The assessment request names {len(value)} participants ({', '.join(value)}); "
            "this benchmark evaluates exactly one.",
            fix,
        )
    role, url = next(iter(value.items()))
    if not role.strip():
        raise InvalidAssessment("The participant's role is empty.", fix)
    if not isinstance(url, str):
        raise InvalidAssessment(
            f"Participant {role!r} has a JSON {json_type(url)} instead of a URL.", fix
        )
    try:
        _URL.validate_python(url.strip())
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"]
        raise InvalidAssessment(
            f"Participant {role!r} has no valid http(s) URL: {url!r} ({reason}).",
            "give the participant's A2A URL, e.g. http://host:9019/.",
        ) from None
    return {role: url.strip()}


# the keys that narrow the selection: a misspelt one must not widen it to the whole dataset
SELECTION_KEYS = (
    "instance_ids", "pattern", "repo", "count", "shard", "shard_index", "num_shards",
    "num_instances", "max_rows",
)  # fmt: skip


def _refuse_misspelt_selection(config: dict[str, Any]) -> None:
    """InvalidAssessment for an unknown config key one edit away from a selection key
    (``instance_id``, ``Count``, ``patern``): ignoring it would run the whole dataset."""
    for key in config:
        if not isinstance(key, str) or key in CONFIG_KEYS:
            continue
        for known in SELECTION_KEYS:
            if one_edit_apart(key.lower(), known):
                raise InvalidAssessment(
                    f"Unknown config key {key[:80]!r}: did you mean {known!r}? A misspelt "
                    "selection key is not ignored, it would widen the assessment to the "
                    "whole dataset.",
                    f"spell it {known!r} and send the request again.",
                )


def _refuse_misspelt_request_key(payload: dict[str, Any]) -> None:
    """InvalidAssessment for an unknown top-level key close to ``participants`` or ``config``
    (``confg``, ``Config``, ``configuration``): ignoring a misspelt ``config`` would run the
    whole dataset with the server's settings."""
    for key in payload:
        if not isinstance(key, str) or key in REQUEST_KEYS:
            continue
        folded = key.lower()
        close = [
            known for known in REQUEST_KEYS
            if one_edit_apart(folded, known) or difflib.get_close_matches(folded, [known])
        ]  # fmt: skip
        if close:
            raise InvalidAssessment(
                f"Unknown key {key[:80]!r} in the assessment request: did you mean "
                f"{close[0]!r}? The request's keys are {', '.join(map(repr, REQUEST_KEYS))}; "
                "a misspelt one is not ignored, it would widen the assessment to the whole "
                "dataset.",
                f"spell it {close[0]!r} and send the request again.",
            )


def one_edit_apart(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by at most one insertion, deletion, substitution or swap
    of two neighbouring characters."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :] or (
            a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :]
        )
    return (a[i + 1 :] == b[i:]) if len(a) > len(b) else (a[i:] == b[i + 1 :])


def _unknown(where: str, payload: dict[str, Any], known: tuple[str, ...]) -> list[str]:
    """The keys of ``payload`` not in ``known``, each named with a did-you-mean hint."""
    hints = []
    for key in payload:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        shown = f"{where}{key}"[:80]
        hints.append(f"{shown!r} (did you mean {close[0]!r}?)" if close else repr(shown))
    return hints


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "value"
        message = error["msg"].removeprefix("Value error, ").rstrip(".")
        got = json.dumps(error.get("input"), default=str)
        if len(got) > 80:
            got = got[:77] + "..."
        problems.append(f"{where}: {message} (got {got})")
    return "; ".join(problems)
