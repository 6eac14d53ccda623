"""Repositories on the host, shared below the phases: git run with the host's git
(:mod:`.git_commands`), the cache of bare mirrors and the checkouts made from them
(:mod:`.repo_cache`), and the clean history a container's repository gets
(:mod:`.clean_history`: the base commit's, and the shared history of an environment)."""
