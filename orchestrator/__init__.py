"""swe-green: a self-hosted SWE-bench Verified evaluator (AgentBeats green agent)."""

__version__ = "0.1.0"
