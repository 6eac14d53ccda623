"""The assessment request the green agent receives over A2A: parsing and validation.

A request is one message whose text is JSON (or a data part holding the same object)::

    {"participants": {"<role>": "<participant A2A URL>"}, "config": {...}}

with exactly one participant. ``config`` is optional; its keys are listed in
:data:`CONFIG_KEYS`. Unknown keys, at the top level or in ``config``, are rejected with a
message that names them: a typo must not silently run the whole benchmark with defaults.
Numbers may arrive as floats (A2A data parts carry every number as a double): ``2.0`` is
accepted where a whole number is expected, ``2.5`` is not.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    HttpUrl,
    PositiveFloat,
    PositiveInt,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from orchestrator.errors import UserError
from orchestrator.instances import Selection, parse_shard

REQUEST_KEYS = ("participants", "config")
EXAMPLE = (
    '{"participants": {"agent": "http://host:port/"}, '
    '"config": {"instance_ids": ["django__django-11099"]}}'
)


class InvalidAssessment(UserError):
    """The assessment request cannot be run as sent; the message says what is wrong."""


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


def _valid_shard(value: str) -> str:
    try:
        parse_shard(value)
    except UserError as exc:
        raise ValueError(str(exc)) from None
    return value


Count = Annotated[PositiveInt, BeforeValidator(_not_bool)]
Seconds = Annotated[PositiveFloat, BeforeValidator(_not_bool)]


class AssessmentConfig(BaseModel):
    """The ``config`` object of a request. Every key is optional."""

    model_config = ConfigDict(extra="forbid")

    instance_ids: list[str] | None = Field(
        None, description="Exact instance ids: a list, or one comma-separated string."
    )
    pattern: str | None = Field(None, description="fnmatch glob on instance_id, e.g. 'django__*'.")
    repo: str | None = Field(None, description="Only this repository ('owner/name' or 'name').")
    count: Count | None = Field(
        None, description="Keep the first N selected instances (alias: num_instances)."
    )
    shard: Annotated[str, AfterValidator(_valid_shard)] | None = Field(
        None, description="'i/n': the i-th (1-based) of n near-equal slices of the selection."
    )
    concurrency: Count | None = Field(
        None, description="Instances at once (capped at what the green agent's host allows)."
    )
    setup_strategy: Literal["auto", "recipe", "llm"] | None = Field(
        None, description="Environment setup: auto, recipe or llm."
    )
    instance_timeout: Seconds | None = Field(
        None, description="Seconds for the participant per instance."
    )
    tool_timeout: Seconds | None = Field(None, description="Seconds per tool call.")
    test_timeout: Seconds | None = Field(None, description="Seconds for one test run.")
    participant_timeout: Seconds | None = Field(
        None, description="Seconds to wait for one reply from the participant."
    )
    max_tool_calls: Count | None = Field(None, description="Tool calls per instance.")
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


# the count's alias, accepted as a synonym (not both at once)
_SYNONYMS = {"num_instances": "count"}
# keys as a requester writes them: aliases where a field has one
CONFIG_KEYS: tuple[str, ...] = (
    *(field.alias or name for name, field in AssessmentConfig.model_fields.items()),
    *_SYNONYMS,
)
# config keys that become Settings fields (request name -> settings name)
_SETTINGS_KEYS = {
    "concurrency": "concurrency",
    "setup_strategy": "setup_strategy",
    "instance_timeout": "instance_timeout",
    "tool_timeout": "tool_timeout",
    "test_timeout": "test_timeout",
    "participant_timeout": "participant_timeout",
    "max_tool_calls": "max_tool_calls",
    "validate_env": "validate_env",
}


class AssessmentRequest(BaseModel):
    """A validated request: one participant (role -> A2A URL) and the run's configuration."""

    model_config = ConfigDict(extra="forbid")

    participants: dict[str, str]
    config: AssessmentConfig = Field(default_factory=AssessmentConfig)

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
            ids=c.instance_ids, pattern=c.pattern, repo=c.repo, count=c.count, shard=c.shard
        )

    def to_settings_overrides(self) -> dict[str, Any]:
        """The Settings fields the request sets (only those it gives)."""
        given = self.config.model_dump(exclude_none=True)
        return {_SETTINGS_KEYS[k]: v for k, v in given.items() if k in _SETTINGS_KEYS}


def parse_request(text: str, data: list[Any] | None = None) -> AssessmentRequest:
    """The request in a message: a data part holding an object with ``participants``, else
    the message's text as JSON (a fenced ```json block is unwrapped). InvalidAssessment when
    it is malformed."""
    for item in data or []:
        if isinstance(item, dict) and "participants" in item:
            return validate_request(item)
    body = _unfence(text.strip())
    if not body:
        raise InvalidAssessment("The assessment request is empty.", f"send JSON like {EXAMPLE}.")
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidAssessment(
            f"The assessment request is not JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}).",
            f"send one message whose text is JSON like {EXAMPLE}.",
        ) from None
    return validate_request(payload)


def validate_request(payload: Any) -> AssessmentRequest:
    """Check a decoded request; InvalidAssessment with every problem found, in one line."""
    if not isinstance(payload, dict):
        raise InvalidAssessment(
            f"The assessment request is a JSON {_json_type(payload)}, not an object.",
            f"send JSON like {EXAMPLE}.",
        )
    _reject_unknown("request", payload, REQUEST_KEYS)
    participants = _participants(payload.get("participants"))
    config = payload.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise InvalidAssessment(
            f'"config" is a JSON {_json_type(config)}, not an object.',
            f"send an object with some of: {', '.join(CONFIG_KEYS)}.",
        )
    _reject_unknown("config", config, CONFIG_KEYS)
    config = dict(config)
    for synonym, key in _SYNONYMS.items():
        if synonym in config:
            if key in config:
                raise InvalidAssessment(
                    f'The config gives both "{key}" and "{synonym}".', "give only one of them."
                )
            config[key] = config.pop(synonym)
    try:
        parsed = AssessmentConfig.model_validate(config)
    except ValidationError as exc:
        raise InvalidAssessment(
            f"Invalid config: {_describe(exc)}.", "correct these values and send it again."
        ) from None
    return AssessmentRequest(participants=participants, config=parsed)


_URL = TypeAdapter(HttpUrl)


def _participants(value: Any) -> dict[str, str]:
    fix = 'name exactly one participant: "participants": {"<role>": "<A2A URL>"}.'
    if value is None:
        raise InvalidAssessment('The assessment request has no "participants".', fix)
    if not isinstance(value, dict):
        raise InvalidAssessment(
            f'"participants" is a JSON {_json_type(value)}, not an object.', fix
        )
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
            f"Participant {role!r} has a JSON {_json_type(url)} instead of a URL.", fix
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


def _reject_unknown(where: str, payload: dict[str, Any], known: tuple[str, ...]) -> None:
    unknown = [key for key in payload if key not in known]
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), known, n=1)
        hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
    noun = "key" if len(unknown) == 1 else "keys"
    raise InvalidAssessment(
        f"Unknown {where} {noun}: {', '.join(hints)}.", f"known keys: {', '.join(known)}."
    )


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "value"
        message = error["msg"].removeprefix("Value error, ").rstrip(".")
        got = json.dumps(error.get("input"), default=str)
        problems.append(f"{where}: {message} (got {got})")
    return "; ".join(problems)


def _unfence(text: str) -> str:
    match = re.fullmatch(r"```[\w-]*\s*\n(.*?)\n?```", text, flags=re.DOTALL)
    return match[1].strip() if match else text


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"
