"""Recipes: the spec of each (repository, version) that set-up, dependencies and grading share
(how to set it up, its services, how its tests run, which files are the tests' harness)."""
