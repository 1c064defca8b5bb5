"""Who turned Contributor Insights on, and who may turn it off (docs/decisions.md §53, §68).

The deploy-time enabler (``insights_enabler``) turns throttled-keys mode on where a watched table or
GSI has Contributor Insights DISABLED. Several resources can want the same table on at once: two stacks
watching it, or, within one stack, a replacement and the resource it replaces (CloudFormation creates
the new one, then deletes the old one). So ownership is recorded on the table itself, in its tags, and
not only in a resource's physical id (which no other resource can see):

* ``hotkeys:insights:owner:<token>``: one per resource that wants it on, its value saying which stack
  and logical id that is. The token is new on every create, and is the tail of the physical id.
* ``hotkeys:insights:enabled:<n>``: what the detector turned on (the table ``T``, a GSI the short hash
  of its name), in chunks of one tag value; anything else was on already and is never turned off.

A create tags its owner first (so a delete elsewhere sees it, once listed: a delete in another stack in
the same few seconds may not, and turn off what this owner wants until its next deploy), enables where DISABLED, adds
what it enabled to the record, and waits until its owner tag is listed: DynamoDB's tags are eventually
consistent ("ListTagsOfResource API will only reflect the changes after a few seconds", TagResource API
reference), and the delete of the resource it replaces must see it. If any step fails, it turns off what
it enabled and removes its tag before it fails: the provider framework ignores the rollback's delete of
a resource whose create failed. A delete removes its owner tag; only the last owner turns off what the
record names, where it is still in throttled-keys mode (someone who switched to the full mode owns it
now). A resource written before §68 recorded what it enabled in its physical id and tagged nothing: its
delete hands that over to the record when another owner remains, and turns it off when none does.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from hotkeys.detector.observability import logger
from hotkeys.detector.provisioning.polling import pauses, poll_until
from hotkeys.detector.provisioning.ports import InsightsSwitch
from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source, insights_command
from hotkeys.detector.throttling.throttles import ACCESSED_AND_THROTTLED_KEYS, THROTTLED_KEYS

MODE = THROTTLED_KEYS
FULL_MODE = ACCESSED_AND_THROTTLED_KEYS
ID_PREFIX = "hotkeys-insights"  # hotkeys-insights:<table>:<owner token>
LEGACY_PREFIX = "throttled-insights"  # before §68: throttled-insights:<table>:<flags it enabled>
TABLE_FLAG = "T"
OWNER_TAG = "hotkeys:insights:owner:"
ENABLED_TAG = "hotkeys:insights:enabled:"
# DynamoDB tags (developer guide, "Tagging restrictions in DynamoDB"): values of at most 256 characters
# of letters, numbers, white space and + - = . _ : /
TAG_VALUE_LIMIT = 256
_NOT_TAG_TEXT = re.compile(r"[^A-Za-z0-9 +\-=._:/]")
# How long a create waits for its owner tag to be listed ("after a few seconds"), well inside the
# handler's 60 s timeout.
VISIBLE_ATTEMPTS = 10
VISIBLE_PAUSE_SECONDS = 3.0
WAY_OUT = (
    "Fix the cause (a quota of Contributor Insights rules, a customer-managed key not in -c tableKmsKeyArns, "
    "the table's limit of 50 tags) or deploy with -c throttledKeyInsights=false"
)


class InsightsError(RuntimeError):
    """Contributor Insights could not be enabled; the message names the table or index and the way out."""


class SwitchFailed(RuntimeError):
    """A call on the table failed (the ``InsightsSwitch`` adapter's one error): the message says why."""


class TableGone(SwitchFailed):
    """The table does not exist (in this account and region)."""


@dataclass(frozen=True)
class Owner:
    """One resource that wants throttled-keys mode on a table."""

    token: str
    label: str  # who, for a person reading the table's tags: "<stack name>/<logical id>"

    @property
    def tag(self) -> str:
        return OWNER_TAG + self.token


def new_owner(stack_id: str, logical_id: str, request_id: str) -> Owner:
    """A new owner per create: the request id makes a replacement on the same table a different owner from
    the resource it replaces, so the old one's delete cannot remove the new one's tag."""
    token = hashlib.sha256(f"{stack_id}\n{logical_id}\n{request_id}".encode()).hexdigest()[:16]
    stack_name = stack_id.split("/")[1] if stack_id.count("/") >= 2 else stack_id
    return Owner(token, _NOT_TAG_TEXT.sub("_", f"{stack_name}/{logical_id}")[:TAG_VALUE_LIMIT])


@dataclass(frozen=True)
class Held:
    """What a physical id says: the table, the owner token (None before §68), and, before §68, the flags of
    what that resource enabled."""

    table: str
    owner: str | None
    enabled: frozenset[str] = frozenset()


def physical_id(table: str, owner: Owner) -> str:
    # Table names are at most 255 characters of [a-zA-Z0-9_.-]: the id stays far under CloudFormation's 1 KB.
    return f"{ID_PREFIX}:{table}:{owner.token}"


def held(resource_id: str) -> Held | None:
    """What a physical id this module (or its pre-§68 version) wrote holds; None for any other (the provider
    framework's id for a failed create among them): nothing to release."""
    parts = resource_id.split(":", 2)
    if len(parts) != 3 or not parts[1]:
        return None
    if parts[0] == ID_PREFIX and parts[2]:
        return Held(parts[1], parts[2])
    if parts[0] == LEGACY_PREFIX:
        return Held(parts[1], None, frozenset(flag for flag in parts[2].split(".") if flag))
    return None


def index_token(index: str) -> str:
    """A short, fixed-length stand-in for an index name (index names run to 255 characters)."""
    return hashlib.sha256(index.encode()).hexdigest()[:10]


def flag(source: Source) -> str:
    return TABLE_FLAG if source.index is None else index_token(source.index)


def owners_in(tags: Mapping[str, str]) -> set[str]:
    return {key.removeprefix(OWNER_TAG) for key in tags if key.startswith(OWNER_TAG)}


def recorded(tags: Mapping[str, str]) -> set[str]:
    """The flags of what the detector turned on, from the record's tags."""
    return {flag for key, value in tags.items() if key.startswith(ENABLED_TAG) for flag in value.split(".") if flag}


def record_tags(flags: Iterable[str]) -> dict[str, str]:
    """The record as tags: the flags, '.'-separated, in as many values of at most 256 characters as needed
    (21 flags fit in one; a table's GSI quota can be raised)."""
    chunks: list[str] = []
    for item in sorted(set(flags)):
        if chunks and len(chunks[-1]) + 1 + len(item) <= TAG_VALUE_LIMIT:
            chunks[-1] += f".{item}"
        else:
            chunks.append(item)
    return {f"{ENABLED_TAG}{n}": chunk for n, chunk in enumerate(chunks)}


def mode_of(status: RuleStatus) -> str | None:
    """A mode-less ENABLED answer is the full mode (the only one there was before modes existed)."""
    if status.mode is None and status.status in ("ENABLED", "ENABLING"):
        return FULL_MODE
    return status.mode


@dataclass(frozen=True)
class Claimed:
    """A create's outcome: counts only (a custom resource's response must stay under 4 KB)."""

    owner: Owner
    targets: int
    enabled: int


def claim(switch: InsightsSwitch, table: str, owner: Owner, pause: Callable[[float], None] = time.sleep) -> Claimed:
    """Register ``owner`` on ``table`` and turn throttled-keys mode on where it is DISABLED. On any failure,
    turn off what this call turned on and remove the owner tag, then raise ``InsightsError``."""
    try:
        arn, sources = switch.sources(table)
    except TableGone:
        raise InsightsError(f"table {table!r} does not exist in this account and region") from None
    except SwitchFailed as error:
        raise InsightsError(f"cannot describe table {table!r}: {error}. {WAY_OUT}") from None
    enabled: list[Source] = []
    tagged = False
    doing = f"read the tags of table {table!r}"
    try:
        tags = switch.tags(arn)
        # This resource's own tag from before (an update rolled back to this table after moving it to
        # another): the same owner again, or the old tag would stay behind as an owner nobody releases.
        owner = next(
            (Owner(token, owner.label) for token in owners_in(tags) if tags[OWNER_TAG + token] == owner.label), owner
        )
        doing = f"tag table {table!r} as watched by {owner.label} ({owner.tag})"
        # Set before the call (one the service applied but whose answer was lost is undone too), and only
        # for a tag this call adds: a failure must not remove this resource's tag from before.
        tagged = owner.tag not in tags
        switch.tag(arn, {owner.tag: owner.label})
        for source in sources:
            doing = f"read Contributor Insights on {source.where}"
            if switch.status(source).status != "DISABLED":
                continue  # on in either mode, or someone else is changing it: left as it is
            doing = f"enable Contributor Insights ({MODE}) on {source.where}"
            enabled.append(source)  # before the call, as the tag
            switch.enable(source, MODE)
        before = recorded(tags)
        after = before | {flag(source) for source in enabled}
        if after != before:
            doing = f"record on table {table!r} what the detector enabled"
            switch.tag(arn, record_tags(after))
    except Exception as error:
        _undo(switch, arn, enabled, owner if tagged else None)
        if isinstance(error, SwitchFailed):
            raise InsightsError(f"cannot {doing}: {error}. {WAY_OUT}") from None
        raise
    _await_listed(switch, arn, owner, pause)
    return Claimed(owner, targets=len(sources), enabled=len(enabled))


def _undo(switch: InsightsSwitch, arn: str, enabled: list[Source], owner: Owner | None) -> None:
    """A failed create's own side effects, undone as far as possible; what cannot be is logged with the
    command that does it (nothing else will: the rollback's delete never reaches the handler)."""
    for source in reversed(enabled):
        try:
            switch.disable(source)
        except SwitchFailed as error:
            logger.warning(
                "could not turn off Contributor Insights a failed create had turned on",
                extra={"target": source.where, "reason": str(error), "command": insights_command(source, "DISABLE")},
            )
    if owner is not None:
        try:
            switch.untag(arn, [owner.tag])
        except SwitchFailed as error:
            logger.warning(
                "could not remove the owner tag of a failed create",
                extra={"table_arn": arn, "tag": owner.tag, "reason": str(error)},
            )


def _await_listed(switch: InsightsSwitch, arn: str, owner: Owner, pause: Callable[[float], None]) -> bool:
    """Until the owner tag is listed: the delete of a resource this one replaces comes right after."""

    def listed() -> bool:
        try:
            return owner.tag in switch.tags(arn)
        except SwitchFailed:
            return False  # the tag was written; only its reading failed

    if poll_until(listed, pauses(VISIBLE_ATTEMPTS - 1, VISIBLE_PAUSE_SECONDS, pause)):
        return True
    logger.warning(
        "the owner tag is not listed yet; a resource this one replaces may turn Contributor Insights off",
        extra={"table_arn": arn, "tag": owner.tag, "seconds": VISIBLE_ATTEMPTS * VISIBLE_PAUSE_SECONDS},
    )
    return False


@dataclass(frozen=True)
class Released:
    """A delete's outcome."""

    table: str | None = None
    disabled: list[str] = field(default_factory=list)  # what it turned off
    left_on: list[str] = field(default_factory=list)  # what it could not turn off (logged with the command)
    other_owners: int = 0


def release(switch: InsightsSwitch, resource_id: str) -> Released:
    """Remove this resource's ownership; the last owner turns off what the detector turned on. Raises
    ``SwitchFailed`` (``TableGone`` when the table is gone): the handler logs it and the delete succeeds."""
    mine = held(resource_id)
    if mine is None:
        return Released()
    arn, sources = switch.sources(mine.table)
    tags = switch.tags(arn)
    mine_tag = [OWNER_TAG + mine.owner] if mine.owner else []
    others = owners_in(tags) - {mine.owner}
    before = recorded(tags)
    enabled = before | mine.enabled
    if others:
        # Still wanted: leave it on, and hand over what a pre-§68 id recorded to whoever leaves last.
        if enabled != before:
            switch.tag(arn, record_tags(enabled))
        if mine_tag:
            switch.untag(arn, mine_tag)
        return Released(mine.table, other_owners=len(others))
    disabled, left = [], []
    for source in sources:
        if flag(source) not in enabled:
            continue
        try:
            status = switch.status(source)
            if status.status not in ("ENABLED", "ENABLING") or mode_of(status) != MODE:
                continue
            switch.disable(source)
        except SwitchFailed as error:
            logger.warning(
                "could not turn Contributor Insights off",
                extra={"target": source.where, "reason": str(error), "command": insights_command(source, "DISABLE")},
            )
            left.append(source)
            continue
        disabled.append(source.where)
    # What could not be turned off stays recorded, for a later owner's delete to retry.
    kept = record_tags(flag(source) for source in left)
    if kept:
        switch.tag(arn, kept)
    stale = [key for key in tags if key.startswith(ENABLED_TAG) and key not in kept]
    if stale or mine_tag:
        switch.untag(arn, stale + mine_tag)
    return Released(mine.table, disabled=disabled, left_on=[source.where for source in left])
