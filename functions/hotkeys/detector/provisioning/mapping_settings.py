"""An event source mapping's settings as the stack gives them and as Lambda describes them.

CloudFormation delivers a custom resource's scalar properties as strings ("100", "true"): each setting is
coerced to the type of its member in botocore's Lambda model, and an unknown setting fails the deploy
before anything is changed (``coerce_settings``). An update sends only what differs from the mapping Lambda
describes (``drift``).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters

__all__ = ["MOVING", "coerce_settings", "drift"]

# The resource's own properties: a change of either is a move to another function or stream.
MOVING = ("FunctionName", "EventSourceArn")


def coerce_settings(service_model: Any, settings: Any) -> dict[str, Any]:
    """``Settings`` as CreateEventSourceMapping parameters, each value of its member's type in ``service_model``.

    Raises ValueError naming a setting that is not a parameter (or is the resource's own FunctionName or
    EventSourceArn), or whose value is not of its type; botocore's own validation (ranges, lengths) runs
    here too, so that nothing is displaced for a request that could never succeed.
    """
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise ValueError(f"Settings must be a map of CreateEventSourceMapping parameters, not {settings!r}")
    shape = service_model.operation_model("CreateEventSourceMapping").input_shape
    coerced: dict[str, Any] = {}
    for name, value in settings.items():
        if name in MOVING or name not in shape.members:
            raise ValueError(
                f"unknown event source mapping setting {name!r} (not a CreateEventSourceMapping parameter)"
            )
        coerced[name] = _coerce(value, shape.members[name], name)
    # Placeholders for the pair: only the settings' own validity is judged here.
    try:
        validate_parameters({"FunctionName": "f", "EventSourceArn": "arn:aws:x"} | coerced, shape)
    except ParamValidationError as error:
        raise ValueError(f"event source mapping settings: {error}") from None
    return coerced


def _coerce(value: Any, shape: Any, path: str) -> Any:
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            raise ValueError(f"setting {path} must be a map, not {value!r}")
        unknown = [name for name in value if name not in shape.members]
        if unknown:
            raise ValueError(f"unknown event source mapping setting {path}.{unknown[0]}")
        return {name: _coerce(item, shape.members[name], f"{path}.{name}") for name, item in value.items()}
    if kind == "list":
        if not isinstance(value, list):
            raise ValueError(f"setting {path} must be a list, not {value!r}")
        return [_coerce(item, shape.member, f"{path}[{index}]") for index, item in enumerate(value)]
    if kind == "map":
        if not isinstance(value, dict):
            raise ValueError(f"setting {path} must be a map, not {value!r}")
        return {str(key): _coerce(item, shape.value, f"{path}.{key}") for key, item in value.items()}
    if kind == "boolean":
        return _boolean(value, path)
    if kind in ("integer", "long"):
        return _integer(value, path)
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value  # strings, and timestamps as botocore takes them (ISO 8601 strings or datetimes)


def _boolean(value: Any, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"setting {path} must be true or false, not {value!r}")


def _integer(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"setting {path} must be a whole number, not {value!r}")


def drift(wanted: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The settings of ``wanted`` (UpdateEventSourceMapping's) that ``current`` does not have, as an update.

    ``Enabled`` is read from the State; filters added outside the stack (or encrypted with a key, which
    GetEventSourceMapping shows only to kms:Decrypt) are removed with an empty FilterCriteria ("To remove
    filter criteria from an event source, you can run ... update-event-source-mapping ... with an empty
    FilterCriteria object", Lambda's event filtering guide) unless the stack sets its own."""
    changes = {}
    for name, value in wanted.items():
        if name == "Enabled":
            if value != (current.get("State") in ("Enabled", "Enabling")):
                changes[name] = value
        elif _differs(value, current.get(name)):
            changes[name] = value
    filtered = (current.get("FilterCriteria") or {}).get("Filters") or current.get("KMSKeyArn")
    if filtered and "FilterCriteria" not in wanted:
        changes["FilterCriteria"] = {}
    return changes


def _differs(wanted: Any, current: Any) -> bool:
    """Whether ``current`` lacks ``wanted``: maps compared on the keys the stack sets (Lambda adds its own,
    an empty OnSuccess), everything else as equal values."""
    if isinstance(wanted, dict):
        return not isinstance(current, dict) or any(_differs(v, current.get(k)) for k, v in wanted.items())
    return bool(wanted != current)
