"""Phase 2: the environment image: the plan (strategy, Python, cache keys), the set-up scripts
and steps, base images, the shared registry, remembered failed builds."""
