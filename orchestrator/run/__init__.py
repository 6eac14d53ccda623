"""Joining the phases: one instance (pipeline), a selection (scheduler), the run directory
and the run bootstrap shared by the front ends."""
