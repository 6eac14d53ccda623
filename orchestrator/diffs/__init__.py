"""Patches as unified diffs, shared below the phases: the one unified-diff model
(:mod:`.diff`: read, split by file, filtered; pure), and a patch applied safely in a sandbox
(:mod:`.apply`, with the path checks of :mod:`.safety`). Phase 6 takes the patch with it,
phase 7 applies and audits it, the recipes read their test patches with it."""
