"""The ``swe-green`` command line: :mod:`.app` registers every command of the ``commands_*``
modules in one table (``main`` is the installed script); :mod:`.common` holds their shared
options and console, :mod:`.tables` and :mod:`.live_progress` what they print, and
:mod:`.run_plan`, :mod:`.participant_factory`, :mod:`.participant_checks` and
:mod:`.assess_client` what ``run`` and ``assess`` need beyond the run driver."""
