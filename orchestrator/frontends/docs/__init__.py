"""The documentation's generated reference pages (:mod:`.reference_pages`, filled in by the
MkDocs hook ``scripts/mkdocs_hooks.py``): each command's real ``--help``, the settings table,
the statuses and result schemas, and the assessment request's limits, from the code."""
