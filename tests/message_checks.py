"""What every alert message must keep to, whatever the incident (issue #45 item 4, issue #47): written from
what a subscriber reads (the alert document), not from the code that builds it.

* a message's peak is at least the rate it quotes, and the most the rate can be is at least the rate;
* its % of the limit is its rate's, and its "possibly hot" says whether the incident's peak stayed under
  the alert threshold (only the rate's upper end reached it);
* within one incident (table, index, key, reason), the peak its messages quote never goes down, and an
  update (``escalated``) quotes a peak higher than every message before it.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any


def check_messages(alerts: Iterable[dict[str, Any]], limit: float = 1000.0, threshold: float = 0.8) -> int:
    """Asserts the rules above over ``alerts`` in the order they were sent; returns how many it checked."""
    incidents: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    checked = 0
    for alert in alerts:
        checked += 1
        rate, peak, most = alert["wcu_per_second"], alert["peak_wcu_per_second"], alert["at_most_wcu_per_second"]
        if alert["status"] != "resolved":
            assert peak >= rate, alert
            assert most >= rate, alert
            # (exact: the rate as the document gives it, a tenth, in percent of the limit to a tenth rounded down)
            tenths = math.floor(Fraction(str(rate)) * 1000 / Fraction(str(limit)))
            assert alert["percent_of_limit"] == tenths / 10, alert
        if alert["reason"] == "partition_limit":
            assert alert["possibly_hot"] == (peak < threshold * limit), alert
            if alert["status"] == "firing" and "subject" in alert:
                # the subject quotes the document's rate, rounded down (a range's ends too)
                tag = "[possibly hot]" if alert["possibly_hot"] else "[hot key]"
                numbers = (
                    f"at {math.floor(rate):,}-{math.floor(most):,} WCU/s"
                    if alert["possibly_hot"]
                    else f"at {math.floor(rate):,} WCU/s ({tenths // 10}% of partition limit)"
                )
                assert alert["subject"].startswith(tag) and numbers in alert["subject"], alert
        incidents[(alert["table"], alert.get("index"), alert["key"], alert["reason"])].append(alert)
    for messages in incidents.values():
        peaks = [message["peak_wcu_per_second"] for message in messages]
        for before, after in itertools.pairwise(peaks):
            assert after >= before, messages
        for position, message in enumerate(messages):
            if message["status"] == "escalated":
                assert all(message["peak_wcu_per_second"] > earlier for earlier in peaks[:position]), messages
    return checked
