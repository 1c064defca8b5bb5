"""Delivers an incident's messages: claim the transition with the message it owes, publish, confirm.

Used by both writers of incidents: the stream consumer's first alarm (a crossing on its own shard's
figures) and the judge (everything else). The protocol (``alerts.incidents``):

* the transition is written with ``pending`` naming the message and its owner (a conditional write on
  the version read: a writer that lost a race gets the incident as it stands and decides again);
* the message is published; SNS answering with an error means nothing was sent (``PublishRefused``):
  the pending mark stays, and the owner sends it again (a consumer's retried batch, the judge's next
  look), or anyone once the claim is ``TAKEOVER_SECONDS`` old. No answer at all (timeout, connection
  lost: ``PublishOutcomeUnknown``) may mean it was sent: taken as sent (at most once) and logged;
* the pending mark is removed (the write tried ``CONFIRM_ATTEMPTS`` times). If it still fails, this
  container remembers the message, so its own retries do not send it again.

A duplicate is possible only when a publish succeeds, its confirmation is lost, and the retry runs
somewhere else (another container, or a takeover): never two claims of one transition.
"""

from __future__ import annotations

import dataclasses

from hotkeys.detector.alerts import incidents, rules
from hotkeys.detector.alerts.incidents import Incident, Message
from hotkeys.detector.alerts.messages import Alert, PublishOutcomeUnknown, PublishRefused, display_key
from hotkeys.detector.alerts.ports import IncidentStore, Publisher
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.rate import alert_rate, is_hot, suggested_shards
from hotkeys.detector.observability import logger

Stored = tuple[Incident, int]  # an incident and the version it was read at
# Writes of a confirmation before its error propagates (the SDK's own retries come first).
CONFIRM_ATTEMPTS = 3


class Notifier:
    def __init__(self, settings: Settings, store: IncidentStore, publisher: Publisher, owner: str) -> None:
        self._settings = settings
        self._store = store
        self._publisher = publisher
        self.owner = owner  # who claims: a shard id, or a judge container's name
        # Messages this container published: (table, incident, message, claimed at).
        self._sent: set[tuple[str, str, str, float]] = set()

    # -- transitions ------------------------------------------------------------------------
    def start(self, hot: rules.HotKey, now: float, owner: str | None = None) -> tuple[bool, Stored | None]:
        """Start the incident ``hot`` crosses into, owing its firing message, and deliver it. Returns whether
        it was started here, and the incident as it now stands: this one, delivered; or another's (another
        writer started it, it is resolved on a later window, or it still owes its resolution; None if it
        cannot be read)."""
        claimant = owner or self.owner
        incident = incidents.started(hot, claimant, now)
        written, current = self._store.start(incident, now)
        if not written:
            return False, current
        return True, self.deliver(incident, 1, now, hot)

    def write(
        self, before: Stored, after: Incident, now: float, hot: rules.HotKey | None = None
    ) -> tuple[bool, Stored | None]:
        """Write ``after`` over ``before`` (conditional on its version); deliver the message it owes, if any.
        Returns whether it was written, and the incident as stored now (when another write got there
        first, as that write left it: DynamoDB returns it with the failed condition; None if it is gone)."""
        incident, version = before
        written, current = self._store.update(after, version, now)
        if not written:
            return False, current
        if after.pending is not None and after.pending != incident.pending:
            return True, self.deliver(after, version + 1, now, hot)
        return True, (after, version + 1)

    def deliver(self, incident: Incident, version: int, now: float, hot: rules.HotKey | None = None) -> Stored:
        """Publish the message ``incident`` owes (once per container) and confirm it; PublishRefused
        propagates (nothing went out: the pending mark stays for a retry)."""
        pending = incident.pending
        if pending is None:
            return incident, version
        memory = (incident.table, incident.name, pending.message.value, pending.claimed_at)
        if memory not in self._sent:
            try:
                self._publish(incident, pending, hot)
            except PublishOutcomeUnknown as error:  # an error answer (PublishRefused) propagates as is
                logger.warning(
                    "alert publish outcome unknown; not resent",
                    extra={
                        "table": incident.table,
                        "key": incident.key,
                        "status": pending.message,
                        "error": str(error),
                    },
                )
            self._sent.add(memory)
        done = incidents.confirmed(incident)
        written, current = self._confirm(done, version, now)
        if written:
            return done, version + 1
        # Unchanged but for its version (another writer raised its peak): confirm once more.
        if (
            current is not None
            and current[0].pending == pending
            and self._store.update(dataclasses.replace(current[0], pending=None), current[1], now)[0]
        ):
            return dataclasses.replace(current[0], pending=None), current[1] + 1
        logger.warning(
            "could not confirm an alert as published", extra={"key": incident.key, "status": pending.message}
        )
        return current if current is not None else (incident, version)

    def _confirm(self, done: Incident, version: int, now: float) -> tuple[bool, Stored | None]:
        """The confirmation, tried again at once when the store errs: the message went out, and a
        confirmation that stays unwritten is what could send it twice (from another container)."""
        for _ in range(CONFIRM_ATTEMPTS - 1):
            try:
                return self._store.update(done, version, now)
            except Exception:
                logger.warning("could not write an alert's confirmation; trying again", extra={"key": done.key})
        return self._store.update(done, version, now)

    # -- messages ---------------------------------------------------------------------------
    def alert(self, incident: Incident, message: Message, hot: rules.HotKey | None = None) -> Alert:
        """The message ``incident`` owes, with ``hot``'s figures (its window's, when sent) where it has them."""
        settings = self._settings
        partition = incident.reason is rules.Reason.PARTITION_LIMIT
        seconds = settings.window_seconds
        if message is Message.RESOLVED or hot is None:
            window = incident.resolved_window if message is Message.RESOLVED else incident.last_hot_window
            level = incident.resolved_level if message is Message.RESOLVED else incident.peak
            rate, share = (level, 0.0) if partition else (0.0, level)
            figures = dict(
                window_start=window or incident.last_hot_window, wcu=int(rate * seconds), rate=rate, share=share
            )
            at_most = rate
        else:
            figures = dict(window_start=hot.window_start, wcu=hot.wcu, rate=hot.wcu_per_second, share=hot.share)
            at_most = max(hot.wcu_per_second, hot.at_most_wcu_per_second)
        if message is Message.FIRING:
            figures["rate"] = incident.fired_rate if partition else figures["rate"]
        # The incident's peak is the highest rate its key reached: never below the rate a message quotes
        # (a resolution quotes the level it resolved on, the rate's ``at_most``, not a rate).
        quoted = float(figures["rate"]) if message is not Message.RESOLVED or not partition else 0.0
        peak = max(incident.highest_rate, quoted)
        return Alert(
            table=incident.table,
            index=incident.index,
            key=display_key(incident.key, settings.key_display, settings.key_hash_salt),
            window_start=int(figures["window_start"]),
            window_seconds=seconds,
            wcu=int(figures["wcu"]),
            wcu_per_second=round(float(figures["rate"]), 1),
            partition_wcu_limit=settings.partition_wcu_limit,
            share=round(float(figures["share"]), 4),
            reason=incident.reason,
            status=message,
            peak_wcu_per_second=round(peak, 1),
            at_most_wcu_per_second=round(max(at_most, float(figures["rate"])), 1),
            possibly=partition and not is_hot(peak, settings),
            peak_share=round(incident.peak, 4) if not partition else 0.0,
            alert_wcu_per_second=alert_rate(settings),
            suggested_shards=suggested_shards(peak, settings),
            started=incident.fired_at,
            lasted_seconds=incident.lasted(seconds) if message is Message.RESOLVED else None,
            pattern=hot.pattern if hot else None,
            remedy=hot.remedy if hot else None,
            items=hot.items if hot else None,
            items_advice=hot.items_advice if hot else None,
        )

    def _publish(self, incident: Incident, pending: incidents.Pending, hot: rules.HotKey | None) -> None:
        alert = self.alert(incident, pending.message, hot)
        message_id = self._publisher.publish(alert)
        logger.info(
            "alert published",
            extra={
                "table": alert.table,
                "key": alert.key,
                "reason": alert.reason,
                "status": alert.status,
                "wcu_per_second": alert.wcu_per_second,
                "peak_wcu_per_second": alert.peak_wcu_per_second,
                "message_id": message_id,
                "claimed_by": pending.owner,
                "sent_by": self.owner,
            },
        )


__all__ = ["Notifier", "PublishOutcomeUnknown", "PublishRefused", "Stored"]
