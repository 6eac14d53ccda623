"""The sandbox tools on the host side, shared below the phases: the tool calls and their
results (:mod:`.tool_protocol`) and the code that runs them in a sandbox (:mod:`.tools_host`),
used by the participant's A2A client (phase 5) and the LLM set-up agent (phase 2) alike."""
