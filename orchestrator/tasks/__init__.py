"""New tasks from a repository's own history (``swe-green tasks``): the changes that fix
something and touch tests, collected as candidate instances in SWE-bench's format
(:mod:`.collect`), their problem statements (:mod:`.statements`), and the candidates
validated into a dataset with the inferred environments (:mod:`.validate`)."""
