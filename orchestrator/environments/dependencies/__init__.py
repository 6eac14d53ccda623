"""Phase 3: dependencies: the reinstall after a patch (or at the base) and its guard, egress
and package-index proxy."""
