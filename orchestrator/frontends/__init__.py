"""Front ends, one package each: the command line (:mod:`.cli`), the A2A green agent
(:mod:`.server`), the reference participants (:mod:`.reference_participants`), a run's report
and viewer (:mod:`.report`, :mod:`.viewer`), the documentation's reference pages
(:mod:`.docs`), and what the CLI and the server both use (:mod:`.shared`)."""
