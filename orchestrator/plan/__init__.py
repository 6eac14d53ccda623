"""The environment plan, shared below the phases: how an instance's environment is built
(:mod:`.env_plan`) and what its images are named (:mod:`.image_names`)."""
