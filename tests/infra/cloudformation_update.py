"""How CloudFormation applies a stack update to the event source mappings, as its documentation and
Lambda's describe it (``../shared/NOTES.md``, "Deploy, update and delete paths"):

* ``AWS::Lambda::EventSourceMapping``'s ``EventSourceArn``, ``StartingPosition`` and
  ``StartingPositionTimestamp`` require replacement ("Update requires: Replacement"); its other
  properties update in place;
* CloudFormation creates a replacement, and every resource new to the template, before it deletes the
  resources replaced or removed (the cleanup phase); a cleanup delete that fails is retried, then left,
  and the update completes (CloudFormation user guide, "Monitor the progress of a stack update");
* Lambda allows one event source mapping per function and event source: a second fails with
  ``ResourceConflictException``, and the update rolls back.

``Custom::StreamMapping`` (infra/stream_mapping.py) follows its handler's contract
(``hotkeys.detector.handlers.stream_mapping_app``): a Create first deletes any mapping of that function and
stream (its owner's later delete finds nothing); an Update to another function or stream keeps a mapping of
the target that exists (a rollback's move back) or creates one; any other Update is in place, a starting
position included; a Delete deletes its own mapping only.

``mapping_conflicts`` lists what Lambda would refuse, or what would leave a resource of the new template
without its mapping; ``mapping_restarts`` the streams whose reading starts again at the starting
position (a mapping deleted and created anew: Lambda keeps no position across mappings). Values are
compared as deployed: a stream the stack turns on (``Custom::DynamoDBStream``) is its table's, whatever
the logical id of the resource that turned it on; a function is the same by ``Ref`` or by ``Arn``.
"""

from __future__ import annotations

from typing import Any

from hotkeys.detector.provisioning.mapping_settings import MOVING

MAPPING = "AWS::Lambda::EventSourceMapping"
CUSTOM = "Custom::StreamMapping"
REPLACED_ON_CHANGE = ("EventSourceArn", "StartingPosition", "StartingPositionTimestamp")


def _deployed(template: dict[str, Any], value: Any) -> Any:
    """A property's value as the deployed resource holds it, where the template names it indirectly."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target, attribute = value["Fn::GetAtt"]
        resource = template["Resources"].get(target, {})
        if resource.get("Type") == "Custom::DynamoDBStream" and attribute == "StreamArn":
            return ("stream of table", resource["Properties"]["TableName"])
        # The Kinesis modes' sources: the stack's Kinesis data stream, and its enhanced fan-out consumer
        if resource.get("Type") == "AWS::Kinesis::Stream" and attribute == "Arn":
            return ("kinesis stream", target)
        if resource.get("Type") == "AWS::Kinesis::StreamConsumer" and attribute == "ConsumerARN":
            return ("kinesis consumer", target)
        if attribute == "Arn":
            return ("function", target)
    if isinstance(value, dict) and "Ref" in value:
        return ("function", value["Ref"])
    return value


def _mappings(template: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each mapping resource: (its type, its properties as deployed; a custom one's settings flattened)."""
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] not in (MAPPING, CUSTOM):
            continue
        properties = dict(resource["Properties"])
        properties.update(properties.pop("Settings", {}))
        properties.pop("ServiceToken", None)
        found[logical_id] = (resource["Type"], {name: _deployed(template, value) for name, value in properties.items()})
    return found


def _identity(properties: dict[str, Any]) -> tuple[str, str]:
    return repr(properties["FunctionName"]), repr(properties["EventSourceArn"])


def _plan(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(conflicts, restarts) of the update from ``before`` to ``after``, its creates in logical id order."""
    old, new = _mappings(before), _mappings(after)
    holder = {_identity(properties): logical_id for logical_id, (_, properties) in old.items()}
    conflicts, restarts = [], []
    for logical_id, (kind, properties) in sorted(new.items()):
        identity = _identity(properties)
        kept_kind, kept = old.get(logical_id, (None, None))
        if kept is not None and kept_kind == kind:
            changed = REPLACED_ON_CHANGE if kind == MAPPING else MOVING
            if all(kept.get(name) == properties.get(name) for name in changed):
                continue  # updated in place, or unchanged
        # A create (new logical id or type) or a replacement
        displaced = holder.get(identity)
        if displaced is not None and displaced in new and displaced != logical_id:
            conflicts.append(f"{logical_id} and {displaced} both map {identity[1]}")
        elif displaced is not None and kind == MAPPING:
            why = "replaced" if kept is not None else "created"
            conflicts.append(f"{logical_id} {why} while {displaced} reads {identity[1]}")
        elif displaced is not None and kept is not None and kept_kind == kind:
            # A custom resource's move keeps the target's mapping, which the cleanup's delete of its holder removes
            conflicts.append(f"{logical_id} moves onto {identity[1]}, which {displaced}'s cleanup delete unmaps")
        elif displaced is not None:
            restarts.append(f"{logical_id} restarts {identity[1]} (displaces {displaced}'s mapping)")
        holder[identity] = logical_id
    return conflicts, restarts


def mapping_conflicts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What the update from ``before`` to ``after`` would have Lambda refuse (a second mapping of a function
    and event source: ResourceConflictException), or would leave a resource without its mapping."""
    return _plan(before, after)[0]


def mapping_restarts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The streams whose mapping the update deletes and creates anew (reading restarts at the starting
    position, and the old mapping's carried window state is lost)."""
    return _plan(before, after)[1]


def readers_after(
    before: dict[str, Any], after: dict[str, Any], fails_after: int | None, rollback_keeps: bool = True
) -> dict[str, int]:
    """How many of the stack's mappings read each stream once the update from ``before`` to ``after`` is over:
    completed with its cleanup (``fails_after`` None), or failed after its first ``fails_after`` creates and
    moves (in logical id order) and rolled back. CloudFormation rolls back by sending each updated resource
    an Update with its old properties and each resource the update created a Delete (its user guide,
    "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS"); a custom mapping's Delete in that rollback keeps its
    mapping when the stack holds an ``AWS::Lambda::EventSourceMapping`` of its stream whose mapping is gone
    (the handler's rule; ``rollback_keeps`` False: without it), every other Delete deletes."""
    old, new = _mappings(before), _mappings(after)
    live: dict[tuple[str, str], set[str]] = {}
    owner: dict[str, str] = {}  # logical id -> the mapping it names (old template's resources first)
    for logical_id, (_kind, properties) in old.items():
        owner[logical_id] = f"{logical_id}@before"
        live.setdefault(_identity(properties), set()).add(owner[logical_id])
    created: list[tuple[str, str, tuple[str, str]]] = []  # (logical id, kind, identity) created by the update
    moved: list[tuple[str, tuple[str, str], str]] = []  # (logical id, old identity, the mapping moved to)
    steps = 0
    for logical_id, (kind, properties) in sorted(new.items()):
        identity = _identity(properties)
        kept_kind, kept = old.get(logical_id, (None, None))
        if kept is not None and kept_kind == kind and _identity(kept) == identity:
            continue  # in place
        if fails_after is not None and steps >= fails_after:
            break
        steps += 1
        if kept is not None and kept_kind == kind == CUSTOM:
            # A move: the target's mapping that exists is adopted, else one is created
            target = next(iter(live.get(identity, ())), None) or f"{logical_id}@moved"
            live.setdefault(identity, set()).add(target)
            moved.append((logical_id, _identity(kept), target))
            continue
        if kind == CUSTOM:
            live[identity] = set()  # displaced
        mapping = f"{logical_id}@new"
        live.setdefault(identity, set()).add(mapping)
        created.append((logical_id, kind, identity))
    if fails_after is None:
        # Cleanup: removed and replaced resources are deleted, each its own mapping only
        for logical_id in old:
            if (
                logical_id not in new
                or new[logical_id][0] != old[logical_id][0]
                or any(m == logical_id for m, *_ in moved)
            ):
                for readers in live.values():
                    readers.discard(owner[logical_id])
    else:
        # Rollback: moves go back (the original mapping is still there, or is created again), then the
        # created resources and the moves' new mappings get their Delete
        for logical_id, identity, _target in moved:
            readers = live.setdefault(identity, set())
            if not readers:
                readers.add(f"{logical_id}@restored")

        def displaced(identity: tuple[str, str]) -> bool:
            """An earlier release's mapping resource of this stream whose mapping is gone (the handler's rule)."""
            return rollback_keeps and any(
                kind == MAPPING
                and _identity(properties)[1] == identity[1]
                and not any(owner[logical_id] in readers for readers in live.values())
                for logical_id, (kind, properties) in old.items()
            )

        for logical_id, kind, identity in created:
            if not (kind == CUSTOM and displaced(identity)):
                live[identity].discard(f"{logical_id}@new")
        for _logical_id, _identity_before, target in moved:
            if target.endswith("@moved") and not displaced(next(i for i, r in live.items() if target in r)):
                for readers in live.values():
                    readers.discard(target)
    # (streams only: the judge's queue has a mapping of its own function)
    return {identity[1]: len(readers) for identity, readers in live.items() if _is_stream(identity[1])}


def _is_stream(source: str) -> bool:
    """A DynamoDB stream, or a Kinesis data stream (or consumer) the Kinesis modes read."""
    return any(
        mark in source for mark in ("stream of table", "/stream/", ":kinesis:", "kinesis stream", "kinesis consumer")
    )
