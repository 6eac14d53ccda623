"""What to do about an error of each reason: the fix the run viewer shows beside its cause."""

from __future__ import annotations

from orchestrator.models import Reason

FIXES: dict[Reason, str] = {
    Reason.EMPTY_PATCH: "Nothing to fix in swe-green: the participant changed no file. Read its "
    "transcript for why it stopped.",
    Reason.PATCH_APPLY_FAILED: "The patch does not apply to the base commit: read apply.log for "
    "the hunk that failed; the participant must diff against the base commit.",
    Reason.PATCH_PATH_REFUSED: "The patch writes outside the repository or into .git: the "
    "participant must change only files of the working tree.",
    Reason.REINSTALL_REFUSED: "Reinstalling the patched package was refused (it changes the build "
    "in a way grading does not allow): read reinstall.log.",
    Reason.ENVIRONMENT: "The environment could not be built or validated: read setup.log, fix "
    "the recipe or the network, then run again with --resume.",
    Reason.PARTICIPANT_UNREACHABLE: "The participant did not answer: check that its server runs "
    "and its URL is right, then run again with --resume.",
    Reason.PARTICIPANT_TIMEOUT: "The participant took longer than its time limit: raise the "
    "limit (--instance-timeout) or make the participant faster, then --resume.",
    Reason.PARTICIPANT_PROTOCOL: "The participant broke the protocol: read the transcript's last "
    "events for the message it sent.",
    Reason.PARTICIPANT_LIMIT: "The participant hit a limit (tool calls, tokens, output): raise "
    "the limit in the settings or change the participant.",
    Reason.TEST_TIMEOUT: "The tests ran past their time limit: run `swe-green inspect` on the "
    "instance and re-run the tests to see where they hang, or raise --test-timeout.",
    Reason.TEST_CRASH: "The test runner crashed or printed no summary: read test_output.txt's "
    "end; `swe-green inspect` re-runs the tests in the graded state.",
    Reason.DISK_LIMIT: "The container filled its disk quota: free space on the host or raise "
    "the disk limit in the settings.",
    Reason.TEST_OUTPUT_FORGED: "The test output carries the grading's own markers from the "
    "patch: the patch prints them; nothing to fix in swe-green.",
    Reason.TAMPER_DETECTED: "The patch changes the tests or the test tools: every test counts "
    "as failing; read the evidence and the patch.",
    Reason.TWIN_PASSED: "An impossible twin of a FAIL_TO_PASS test passed: the patch's code "
    "passes that test whatever it expects; read the twin (file, line, the changed value) and "
    "the patch.",
    Reason.TWIN_UNPROVEN: "A FAIL_TO_PASS test passed in the official run, but the secret pair "
    "gave no proof for it: read the pair's outputs (twins/1, twins/2) for why its original "
    "failed or its twin gave no outcome.",
    Reason.INFRASTRUCTURE: "Docker or the host failed: check the engine (docker info) and the "
    "disk, then run again with --resume.",
    Reason.CANCELLED: "The run was stopped before this instance finished: run again with --resume.",
}


def fix_for(reason: str) -> str:
    """The fix for an error of ``reason`` (a :class:`Reason` value); "" when none is known."""
    try:
        return FIXES.get(Reason(reason), "")
    except ValueError:
        return ""
