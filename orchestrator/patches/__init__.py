"""Patches (design phase 6): one unified-diff model (:mod:`.diff`), finding the participant's
patch in its answer (:mod:`.extract`) or its container (:mod:`.container_diff`), and applying
one safely (:mod:`.apply`, with the path checks of :mod:`.safety`)."""
