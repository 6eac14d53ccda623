"""Phase 4: the instance image: the repository at the base commit, reinstalled if needed, its
history cut after the base."""
