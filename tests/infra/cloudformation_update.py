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

from hotkeys.detector.handlers.stream_mapping_app import MOVING

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
