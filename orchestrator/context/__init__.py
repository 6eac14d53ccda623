"""What the phases of one run share, below them all: the run's context (settings, sandbox
backend, run id; :mod:`.run_context`) and its directory on disk (:mod:`.run_dir`).

The phases (``environments``, ``participant``, ``patches``, ``grading``) receive a
:class:`.run_context.RunContext` from the run driver (``orchestrator.run``) and never import
the driver.
"""
