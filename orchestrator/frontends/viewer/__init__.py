"""The run viewer: a static site per run directory (``<run>/viewer/``) that opens from disk
and fits an 800-pixel window or a phone. An overview (:mod:`.overview_page`), one page per
instance (:mod:`.instance_page`), a comparison with a baseline run (:mod:`.comparison_page`),
written by :func:`write_viewer` (:mod:`.site`)."""

from orchestrator.frontends.viewer.parts import VIEWER_DIR
from orchestrator.frontends.viewer.site import write_viewer

__all__ = ["VIEWER_DIR", "write_viewer"]
