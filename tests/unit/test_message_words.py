"""What a message says about its rate: one figure, its range when only the upper end crossed, and a
reminder's last minute (issue #45 item 4, issue #47)."""

from __future__ import annotations

import dataclasses

from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import email_text, subject
from tests.message_checks import check_messages
from tests.support import ORDERS_ALERT

POSSIBLY = dataclasses.replace(
    ORDERS_ALERT, wcu_per_second=570.0, at_most_wcu_per_second=812.0, peak_wcu_per_second=570.0, possibly=True
)


def test_a_possibly_hot_key_is_never_called_hot_and_shows_its_range() -> None:
    assert subject(POSSIBLY) == "[possibly hot] orders: event#123 at 570-812 WCU/s (57-81% of partition limit)"
    text = email_text(POSSIBLY)
    assert "570.0 to at most 812.0 WCU/s" in text and "possibly hot" in text
    assert subject(ORDERS_ALERT).startswith("[hot key] orders: event#123 at 930 WCU/s (93%")


def test_a_reminder_says_the_key_is_quiet_rather_than_quote_an_old_rate() -> None:
    quiet = dataclasses.replace(ORDERS_ALERT, status=Message.REMINDER, wcu_per_second=0.0, peak_wcu_per_second=930.0)
    assert subject(quiet) == "[hot key, still] orders: event#123 quiet in the last minute; peaked at 930 WCU/s"
    assert "Still hot: quiet in the last minute (no write seen)" in email_text(quiet)
    busy = dataclasses.replace(quiet, wcu_per_second=610.0)
    assert "Still hot: its heaviest 10 s in the last minute 610.0 WCU/s" in email_text(busy)


def test_the_checks_of_every_message_catch_a_peak_under_its_rate() -> None:
    document = {**ORDERS_ALERT.document(), "subject": subject(ORDERS_ALERT)}
    assert check_messages([document]) == 1
    broken = {**document, "peak_wcu_per_second": 900.0}
    try:
        check_messages([broken])
    except AssertionError:
        return
    raise AssertionError("a peak under the rate it quotes passed the checks")
