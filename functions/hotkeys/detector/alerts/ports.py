"""The alerts' ports: every Protocol the judge (``judge.Judge``), its look chain (``look_chain``) and a
shard's first alarm (``first_alarm``, through ``notifier``) call for I/O (see ``consumer.ports``: each layer
keeps its own)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hotkeys.detector.alerts.incidents import Incident
from hotkeys.detector.alerts.messages import Alert
from hotkeys.detector.consumer.layout import Layout
from hotkeys.detector.consumer.snapshots import SegmentSnapshot

__all__ = ["HeadsReader", "IncidentStore", "LayoutStore", "LookClaim", "LookClaims", "NextLook", "Publisher"]


# -- the judge's (alerts.judge.Judge) and the first alarm's ---------------------------------------
class Publisher(Protocol):
    def publish(self, alert: Alert) -> str: ...


class HeadsReader(Protocol):
    def heads_since(self, table: str, first_window: int, buckets: int) -> list[SegmentSnapshot]:
        """The heads (``snapshots.head_of``) of every stored segment of the table's windows from
        ``first_window`` on, from the window-heads index's first ``buckets`` buckets."""
        ...

    def latest_window(self, table: str, buckets: int) -> int | None:
        """The latest window any head of the table was stored for."""
        ...


class LayoutStore(Protocol):
    def layouts(self) -> list[Layout]:
        """Every watched table's layout (the registry)."""
        ...

    def layout(self, table: str) -> Layout | None: ...

    def save_layout(self, before: Layout | None, after: Layout) -> bool:
        """Write ``after`` if the stored layout is still ``before`` (None: none stored); whether it did."""
        ...


class IncidentStore(Protocol):
    """Incidents with conditional transitions (see adapters/incident_store.py for the rules). ``Stored``
    results are (incident, version)."""

    def start(self, incident: Incident, now: float) -> tuple[bool, tuple[Incident, int] | None]: ...

    def update(self, incident: Incident, version: int, now: float) -> tuple[bool, tuple[Incident, int] | None]: ...

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]: ...

    def get(self, table: str, name: str) -> tuple[Incident, int] | None: ...


# -- the judge's look chain (alerts.look_chain) ------------------------------------------------------
@dataclass(frozen=True)
class LookClaim:
    """A look of the judge as claimed: its due time, when it was claimed, and when it ended (None: still
    running, or its invocation died)."""

    due: int
    at: float
    ended_at: float | None = None


class LookClaims(Protocol):
    """The judge's look claims (``alerts.look_chain``)."""

    def claim(self, claim: LookClaim) -> bool:
        """True for the one caller whose conditional write claimed the look due at ``claim.due``."""
        ...

    def ended(self, due: int, at: float) -> None:
        """The claimed look due at ``due`` ended at ``at`` (its next message is sent next)."""
        ...

    def latest(self) -> LookClaim | None:
        """The latest look claimed (by due time)."""
        ...


class NextLook(Protocol):
    """The judge's queue (``alerts.look_chain``)."""

    def __call__(self, due: int, delay_seconds: int, sent_at: float) -> None:
        """Send the judge the message for the look due at ``due``, delivered ``delay_seconds`` from now,
        saying it was sent at ``sent_at`` (the look before ended then)."""
        ...
