"""What a process in a sandbox prints when the network is out of reach (pure): sandboxes run
with the network off (tests always, set-up outside its allowed hosts), so a failure showing
one of these is an outage or a test needing the internet, not the recipe or the patch.
Set-up does not remember such a build failure (``failed_builds``); grading leaves such a
FAIL_TO_PASS test out (``network_tests``)."""

from __future__ import annotations

import re

# what Python prints when a name cannot be resolved or no route leads out of the container
NETWORK_ERROR = re.compile(
    r"Temporary failure in name resolution|Name or service not known|"
    r"No address associated with hostname|nodename nor servname provided|"
    r"Network is unreachable|\[Errno -[235]\]|\[Errno 101\]|getaddrinfo failed"
)
