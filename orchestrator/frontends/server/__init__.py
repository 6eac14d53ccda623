"""The green agent on A2A (``swe-green serve``): :mod:`.green_agent` builds and serves the
app, :mod:`.assessment_executor` runs an assessment request (:mod:`.assessment`, read by
:mod:`.request_json`, bounded by :mod:`.request_policy`) on the host's slots
(:mod:`.admission`), and :mod:`.assessment_text` says what the requester reads."""
