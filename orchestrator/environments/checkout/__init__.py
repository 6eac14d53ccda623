"""Phase 1: the repository cache (bare mirrors), git on the host, checkouts, and the clean
history exported from a mirror (history hygiene, for phases 2 and 4)."""
