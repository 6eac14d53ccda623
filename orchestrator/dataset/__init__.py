"""SWE-bench instances: loading and selecting them, and the synthetic demo instances."""
