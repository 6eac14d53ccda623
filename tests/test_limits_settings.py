"""The disk budget and reply cap settings (no engine needed)."""

from __future__ import annotations

import pytest

from orchestrator.errors import UserError
from orchestrator.settings import disk_bytes, load_settings


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10g", 10 << 30), ("200m", 200 << 20), ("200MB", 200 << 20), ("512k", 512 << 10),
     ("1000", 1000), ("1.5g", int(1.5 * (1 << 30))), ("0", None)],
)  # fmt: skip
def test_disk_sizes(text, expected):
    assert disk_bytes(text) == expected


def test_defaults_are_ten_gigabytes_and_twenty_megabytes():
    settings = load_settings()
    assert settings.sandbox.disk_bytes() == 10 << 30
    assert settings.participant.max_reply_bytes == 20_000_000


def test_a_bad_disk_limit_is_a_one_line_user_error():
    with pytest.raises(UserError, match="disk_limit.*not a size"):
        load_settings(disk_limit="lots")
