"""MkDocs hook: the reference pages are generated from the code at build time.

A page that says ``<!-- generated: NAME -->`` gets the text of
:data:`orchestrator.frontends.docs.reference_pages.GENERATORS` ``[NAME]`` in its place (every
command's ``--help``, every setting, the statuses, the JSON schemas), so the site cannot
drift from the CLI and the models.
"""

from __future__ import annotations

from typing import Any

from orchestrator.frontends.docs.reference_pages import fill


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return fill(markdown)
