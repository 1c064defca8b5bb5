"""How CloudFormation applies a stack update to the event source mappings, as its documentation and
Lambda's describe it (``../shared/NOTES.md``, "Creates, updates and deletes"):

* ``AWS::Lambda::EventSourceMapping``'s ``EventSourceArn``, ``StartingPosition`` and
  ``StartingPositionTimestamp`` require replacement ("Update requires: Replacement"); its other
  properties update in place;
* CloudFormation creates a replacement, and every resource new to the template, before it deletes the
  resources replaced or removed (the cleanup phase);
* Lambda allows one event source mapping per function and event source: a second fails with
  ``ResourceConflictException``, and the update rolls back.

``mapping_conflicts`` lists the creates of an update from one template to another that Lambda would
refuse. Values are compared as deployed: a stream the stack turns on (``Custom::DynamoDBStream``) is
its table's, whatever the logical id of the resource that turned it on.
"""

from __future__ import annotations

from typing import Any

MAPPING = "AWS::Lambda::EventSourceMapping"
REPLACED_ON_CHANGE = ("EventSourceArn", "StartingPosition", "StartingPositionTimestamp")


def _deployed(template: dict[str, Any], value: Any) -> Any:
    """A property's value as the deployed resource holds it, where the template names it indirectly."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target, attribute = value["Fn::GetAtt"]
        resource = template["Resources"][target]
        if resource["Type"] == "Custom::DynamoDBStream" and attribute == "StreamArn":
            return ("stream of table", resource["Properties"]["TableName"])
    return value


def _mappings(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: {name: _deployed(template, value) for name, value in resource["Properties"].items()}
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == MAPPING
    }


def _identity(properties: dict[str, Any]) -> tuple[str, str]:
    return repr(properties["FunctionName"]), repr(properties["EventSourceArn"])


def mapping_conflicts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The mappings the update from ``before`` to ``after`` creates (new, or a replacement) for a
    function and event source that already has one at that moment: each a ResourceConflictException."""
    old, new = _mappings(before), _mappings(after)
    existing = {_identity(properties): logical_id for logical_id, properties in old.items()}
    conflicts = []
    for logical_id, properties in sorted(new.items()):
        kept = old.get(logical_id)
        if kept is not None and all(kept.get(name) == properties.get(name) for name in REPLACED_ON_CHANGE):
            continue  # updated in place, or unchanged
        identity = _identity(properties)
        if identity in existing:
            why = "replaced" if kept is not None else "created"
            conflicts.append(f"{logical_id} {why} while {existing[identity]} reads {identity[1]}")
        existing[identity] = logical_id
    return conflicts
