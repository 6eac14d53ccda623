"""What more than one front end uses: a participant's agent card read and checked
(:mod:`.participant_card`: the CLI before a run, the server before an assessment), and whole
numbers kept whole for A2A 0.3 clients (:mod:`.compat03`: the server's data parts, the
``assess`` client's output)."""
