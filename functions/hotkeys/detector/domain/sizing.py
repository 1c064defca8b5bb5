"""DynamoDB item size and write units, by AWS's documented capacity rules.

Sizes are computed from the stream's DynamoDB-JSON images (``{"name": {"S": "v"}}``)
without deserializing them: deserialization costs more than the walk (docs/decisions.md §12)
and the detector only needs byte counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

KIB = 1024
_NAME_CACHE_LIMIT = 4096
_name_sizes: dict[str, int] = {}


class SizingError(ValueError):
    """An attribute value is not valid DynamoDB JSON."""


def utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _name_size(name: str) -> int:
    # Attribute names repeat across records; caching them halves the walk.
    size = _name_sizes.get(name)
    if size is None:
        size = utf8_len(name)
        if len(_name_sizes) < _NAME_CACHE_LIMIT:
            _name_sizes[name] = size
    return size


# DynamoDB's documented number range (Developer Guide, "Data types"): "Numbers can have up to 38 digits
# of precision", positive from 1E-130 to 9.9999999999999999999999999999999999999E+125, negative alike.
MAX_NUMBER_DIGITS = 38


def number_size(text: str) -> int:
    """About one byte per two significant digits, plus one (zeros at both ends trimmed)."""
    if not isinstance(text, str) or not text:
        raise SizingError(f"number must be a non-empty string, got {text!r}")
    digits = text[1:] if text[0] in "+-" else text
    exponent_at = digits.find("e")
    if exponent_at < 0:
        exponent_at = digits.find("E")
    if exponent_at >= 0:
        # The exponent is a signed decimal integer ("0e", "1e5_" and "1e_5" are no number; Decimal takes
        # the underscores, float() does not).
        exponent = digits[exponent_at + 1 :]
        if exponent[:1] in ("+", "-"):
            exponent = exponent[1:]
        if not (exponent.isdigit() and exponent.isascii()):
            raise SizingError(f"not a number: {text!r:.60}")
        digits = digits[:exponent_at]
    significant = digits.replace(".", "", 1).strip("0")
    if not significant:
        # (a second dot is left in ``significant``: such a text is never zero, and is refused below)
        if not digits.strip(".") or digits.strip("0.") != "":
            raise SizingError(f"not a number: {text!r}")
        return 2  # zero
    if not (significant.isdigit() and significant.isascii()):
        raise SizingError(f"not a number: {text!r}")
    if len(significant) > MAX_NUMBER_DIGITS:
        raise SizingError(f"number has more than {MAX_NUMBER_DIGITS} significant digits: {text!r:.60}")
    if exponent_at >= 0 or len(digits) > MAX_NUMBER_DIGITS:
        _check_magnitude(text)
    return (len(significant) + 1) // 2 + 1


def _check_magnitude(text: str) -> None:
    from decimal import Decimal, InvalidOperation

    try:
        exponent = Decimal(text).adjusted()  # the power of ten of the first significant digit
    except InvalidOperation:
        raise SizingError(f"not a number: {text!r:.60}") from None
    if not -130 <= exponent <= 125:
        raise SizingError(f"number out of DynamoDB's range (1E-130 to 9.99...E+125 in magnitude): {text!r:.60}")


def binary_size(b64: str) -> int:
    """Raw byte length of a base64 string (the stream's encoding of B values)."""
    if not isinstance(b64, str):
        raise SizingError(f"binary must be a base64 string, got {type(b64).__name__}")
    length = len(b64)
    if length % 4:
        raise SizingError("binary value is not valid base64 (length not a multiple of 4)")
    padding = 2 if b64.endswith("==") else 1 if b64.endswith("=") else 0
    return length * 3 // 4 - padding


def value_size(value: Any) -> int:
    """Size of one attribute value in DynamoDB JSON (``{"S": "x"}``)."""
    try:
        ((kind, raw),) = value.items()
    except (AttributeError, ValueError):
        raise SizingError(f"attribute value must be a one-entry map, got {value!r:.80}") from None
    size_of = _VALUE_SIZES.get(kind)
    if size_of is None:
        raise SizingError(f"unknown attribute type {kind!r}")
    return size_of(raw)


def _string_size(raw: Any) -> int:
    if not isinstance(raw, str):
        raise SizingError("S value must be a string")
    return len(raw) if raw.isascii() else len(raw.encode("utf-8"))


def _map_size(raw: Any) -> int:
    if not isinstance(raw, dict):
        raise SizingError("M value must be a map")
    return 3 + image_size(raw) + len(raw)


def _list_value_size(raw: Any) -> int:
    if not isinstance(raw, list):
        raise SizingError("L value must be a list")
    return _list_size(raw)


def _one_byte(_raw: Any) -> int:
    return 1


def _list_size(elements: list[Any]) -> int:
    total = 3 + len(elements)
    for element in elements:
        total += _element_size(element)
    return total


def _element_size(value: Any) -> int:
    """One value's size; strings, plain integers and maps (a list's usual elements, an update's usual
    changes) without the general dispatch."""
    if type(value) is dict and len(value) == 1:
        raw = value.get("S")
        if type(raw) is str:
            return len(raw) if raw.isascii() else len(raw.encode("utf-8"))
        raw = value.get("N")
        if type(raw) is str and raw.isdigit() and raw.isascii() and len(raw) <= MAX_NUMBER_DIGITS:
            significant = len(raw.strip("0")) or 1
            return (significant + 1) // 2 + 1
        raw = value.get("M")
        if type(raw) is dict:
            return 3 + image_size(raw) + len(raw)
    return value_size(value)


def _set_size(raw: Any, element_size: Any, element_type: type) -> int:
    if not isinstance(raw, list) or not raw:
        raise SizingError("a set must be a non-empty list")
    total = 0
    for element in raw:
        if not isinstance(element, element_type):
            raise SizingError("set element has the wrong type")
        total += element_size(element)
    return total


# Each DynamoDB-JSON type's size from its value (``value_size``).
_VALUE_SIZES: dict[str, Callable[[Any], int]] = {
    "S": _string_size,
    "N": number_size,
    "M": _map_size,
    "L": _list_value_size,
    "BOOL": _one_byte,
    "NULL": _one_byte,
    "B": binary_size,
    "SS": lambda raw: _set_size(raw, utf8_len, str),
    "NS": lambda raw: _set_size(raw, number_size, str),
    "BS": lambda raw: _set_size(raw, binary_size, str),
}


def image_size(image: Any) -> int:
    """Item size in bytes: attribute-name bytes plus value bytes, over all attributes.

    Strings and plain integers, the bulk of most items, are sized inline: this
    loop runs for every attribute of both images of every record.
    """
    if type(image) is not dict:
        raise SizingError("an image must be a map of attributes")
    names = "".join(image)  # every name's bytes in one C-level pass (names are JSON object keys: text)
    total = len(names) if names.isascii() else len(names.encode("utf-8"))
    for value in image.values():
        if type(value) is dict and len(value) == 1:
            # dict.get per likely type is several times cheaper than unpacking items(). A value none of
            # these takes (another type, or one of these malformed) goes through value_size's checks.
            raw = value.get("S")
            if raw is not None and type(raw) is str:
                total += len(raw) if raw.isascii() else len(raw.encode("utf-8"))
                continue
            raw = value.get("N")
            if raw is None:
                raw = value.get("M")
                if raw is not None and type(raw) is dict:
                    total += 3 + image_size(raw) + len(raw)
                    continue
                if type(value.get("L")) is list:
                    total += _list_size(value["L"])
                    continue
            elif type(raw) is str:
                # Plain integers and decimals in DynamoDB's range as they stand; anything else
                # (exponents, signs, more than 38 digits) through number_size's full checks.
                if raw.isdigit() and raw.isascii() and len(raw) <= MAX_NUMBER_DIGITS:
                    significant = len(raw.strip("0")) or 1
                    total += (significant + 1) // 2 + 1
                    continue
                # Decimals (prices, ratios) are the next most common numbers.
                integral, dot, fraction = raw.partition(".")
                digits = integral + fraction
                if dot and digits.isdigit() and digits.isascii() and len(digits) <= MAX_NUMBER_DIGITS:
                    significant = len(digits.strip("0")) or 1
                    total += (significant + 1) // 2 + 1
                    continue
        total += value_size(value)
    return total


def larger_image_size(old: Any, new: Any) -> int:
    """max(size(old), size(new)) for a MODIFY, walking unchanged attributes only once."""
    return max(image_sizes(old, new))


def image_sizes(old: Any, new: Any) -> tuple[int, int]:
    """(size(old), size(new)), 0 for a missing image, walking unchanged attributes only once.

    Updates usually change a few attributes: the old image is sized as the new
    one plus the difference over the attributes that differ (a C-level equality
    test per attribute instead of a second walk).
    """
    if old is None:
        return 0, image_size(new)
    if new is None:
        return image_size(old), 0
    new_size = image_size(new)
    if type(old) is not dict:
        raise SizingError("an image must be a map of attributes")
    delta = 0
    shared = 0
    for name, value in old.items():
        other = new.get(name)
        if other is not None:
            shared += 1
            if other == value:
                continue
            delta -= _attribute_size(name, other)
        delta += _attribute_size(name, value)
    if shared < len(new):  # attributes added by the update
        for name in new.keys() - old.keys():
            delta -= _attribute_size(name, new[name])
    return new_size + delta, new_size


def _attribute_size(name: str, value: Any) -> int:
    """One attribute's name and value bytes."""
    return _name_size(name) + _element_size(value)


def write_units(size_bytes: int) -> int:
    """Standard write units for one write of an item of this size (1 per KB, rounded up, at least 1)."""
    return max(1, -(-size_bytes // KIB))
