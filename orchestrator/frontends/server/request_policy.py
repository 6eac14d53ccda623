"""What a requester of ``swe-green serve`` may choose with its request's config: nothing that
spends more of the operator's resources or money than the operator's own settings.

The rule, key by key (:func:`refused_overrides`):

- ``setup_strategy``: a strategy that may call the paid LLM API more than the operator's does
  (``recipe`` = ``infer``, which never call it, < ``auto``, which calls it when neither a
  recipe nor the inferred environment serves < ``llm``) is refused;
- ``instance_timeout``, ``tool_timeout``, ``test_timeout``, ``participant_timeout``,
  ``max_tool_calls``: a value above the operator's is refused;
- ``validate``: validation the operator turned off (a gold run per instance) is refused;

each unless the operator allows the key (``serve_allowed_overrides``). Asking for the same or
less is always allowed. The other keys spend nothing beyond the operator's choice:
``concurrency`` is capped at the host's slots (never above the operator's ``concurrency``),
the selection keys only pick among the operator's dataset (no key names another dataset),
and the participant's host is checked against ``serve_allowed_hosts``. All pure.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from orchestrator.frontends.server.assessment import SETTINGS_KEYS, AssessmentConfig
from orchestrator.settings.serve import REQUESTER_OVERRIDES

# how much of the paid LLM API a set-up strategy may spend, in order
_LLM_SPEND = {"recipe": 0, "infer": 0, "auto": 1, "llm": 2}
# what asking for more of each key spends
_WHY = {
    "setup_strategy": "it may call the paid LLM API at the operator's expense",
    "validate": "it adds a gold-patch run per instance",
}
_MORE = "more of the operator's host time"


class Refused(BaseModel):
    """One config key asking for more than the operator's setting."""

    key: str  # as the request spells it
    asked: Any
    operator: Any
    why: str


def request_key(settings_name: str) -> str:
    """The request's spelling of a setting the config can set (``validate_env`` ->
    ``validate``)."""
    name = next(k for k, v in SETTINGS_KEYS.items() if v == settings_name)
    return AssessmentConfig.model_fields[name].alias or name


def refused_overrides(
    overrides: dict[str, Any], operator: dict[str, Any], allowed: set[str]
) -> list[Refused]:
    """The keys of ``overrides`` (settings by flat name, as the request sets them) that ask
    for more than ``operator`` (the server's settings, flat) and are not in ``allowed``
    (request keys)."""
    refused = []
    for name, asked in overrides.items():
        key = request_key(name)
        if key not in REQUESTER_OVERRIDES or key in allowed:
            continue
        own = operator[name]
        if key == "setup_strategy":
            more = _LLM_SPEND[asked] > _LLM_SPEND[own]
        elif key == "validate":
            more = bool(asked) and not own
        else:
            more = asked > own
        if more:
            refused.append(Refused(key=key, asked=asked, operator=own, why=_WHY.get(key, _MORE)))
    return refused


def refusal_text(refused: list[Refused]) -> str:
    """The rejection's message: each key, what it asks, the operator's value, and the fix."""
    asks = "; ".join(
        f"{r.key} {_shown(r.asked)} (this green agent's: {_shown(r.operator)}; {r.why})"
        for r in refused
    )
    keys = ",".join(r.key for r in refused)
    return (
        f"The config asks for more than this green agent's operator allows: {asks}. Fix: "
        "leave these keys out or ask for no more than the operator's values, or ask the "
        f"operator to allow them (setting serve_allowed_overrides={keys}, e.g. "
        f"SWE_GREEN_SERVE_ALLOWED_OVERRIDES={keys} or `swe-green serve --allow-requester "
        f"{refused[0].key}`)."
    )


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return repr(value) if isinstance(value, str) else str(value)
