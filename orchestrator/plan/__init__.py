"""What an instance's environment is built from, shared below the phases: the plan
(:mod:`.env_plan`; its images are named by :mod:`orchestrator.image_names`), the install as
data that phase 3 runs, phase 2 plans and grading's reinstall repeats (:mod:`.install`, with
the pins raised for the Python used, :mod:`.pins`), and the bytecode the images carry
(:mod:`.bytecode`, with the in-container :mod:`.bytecode_tool`)."""
