"""The tools that run inside an instance container, and their schemas.

``schemas`` (host side) describes the tools to a model and checks calls; ``tools`` is the
self-contained program copied into the container (see ``orchestrator.tools.tools_host``).
"""

from .schemas import (
    SETUP_AGENT_TOOL_NAMES,
    TOOL_NAMES,
    TOOLS,
    ArgumentError,
    setup_agent_tools,
    tools_for,
    validate_arguments,
)

__all__ = [
    "SETUP_AGENT_TOOL_NAMES",
    "TOOL_NAMES",
    "TOOLS",
    "ArgumentError",
    "setup_agent_tools",
    "tools_for",
    "validate_arguments",
]
