"""The fast paths of item sizing agree with the plain definition on arbitrary images."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.domain.sizing import image_size, image_sizes, larger_image_size
from tests import reference_sizing

names = st.text(min_size=1, max_size=12)


def _significant(number: Decimal) -> int:
    return len("".join(map(str, number.as_tuple().digits)).strip("0"))


numbers = (
    st.decimals(allow_nan=False, allow_infinity=False, places=None)
    # DynamoDB's numbers: magnitude 1E-130 to under 1E+126, at most 38 significant digits.
    .filter(lambda d: d.is_finite() and abs(d.adjusted()) < 120 and _significant(d) <= 38)
    .map(lambda d: {"N": str(d)})
)
scalars = st.one_of(
    st.text(max_size=40).map(lambda s: {"S": s}),
    numbers,
    st.integers(min_value=0, max_value=10**30).map(lambda i: {"N": str(i)}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
    st.sampled_from(["", "AA==", "AAA=", "AAAA", "aGVsbG8="]).map(lambda b: {"B": b}),
    st.lists(st.text(max_size=8), min_size=1, max_size=4, unique=True).map(lambda v: {"SS": v}),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda v: {"L": v}),
        st.dictionaries(names, inner, max_size=4).map(lambda v: {"M": v}),
    ),
    max_leaves=12,
)
images = st.dictionaries(names, values, max_size=8)


def reference_size(image: dict[str, Any]) -> int:
    """The documented rules, read independently of the production walk (tests/reference_sizing.py)."""
    return reference_sizing.item_bytes(image)


@settings(max_examples=150, deadline=None)
@given(image=images)
def test_image_size_fast_paths_match_the_definition(image: dict[str, Any]) -> None:
    assert image_size(image) == reference_size(image)


@settings(max_examples=150, deadline=None)
@given(old=images, new=images, shared=images)
def test_larger_image_size_is_the_max_of_both_sizes(old: dict, new: dict, shared: dict) -> None:
    # Given two images sharing some attributes (as an update does)
    old_image, new_image = {**shared, **old}, {**shared, **new}
    # Then the diff-based size equals the larger full size
    assert larger_image_size(old_image, new_image) == max(image_size(old_image), image_size(new_image))
    # and each image's own size comes out of the same single walk (GSI entries of ALL projections use it)
    assert image_sizes(old_image, new_image) == (reference_size(old_image), reference_size(new_image))
