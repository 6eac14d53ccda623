"""Finding and removing this tool's containers and images by label, one job per module:

- :mod:`.inventory`: list and find containers and images
- :mod:`.names`: container names
- :mod:`.active`: runs in progress (a run's lease)
- :mod:`.kept`: stopped containers kept for inspection
- :mod:`.reaper`: containers a run's end or a dead cluster node leaves
- :mod:`.image_use`: when an image was last used
- :mod:`.gc`: ``swe-green gc``
- :mod:`.prune`: ``swe-green envs prune``

Import from the module that does the job (``orchestrator.housekeeping.gc``); this package
re-exports nothing, so that using one job does not load the others.
"""
