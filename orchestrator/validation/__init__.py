"""Environment validation: phases 1-4's image with the gold patch, graded (one instance), the
tests it selects, and sweeps over many instances."""
