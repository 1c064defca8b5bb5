"""A key's figures as a person reads them (``domain.figures``): rounded down everywhere, so that a figure reaches
a threshold exactly when the rate does (docs/decisions.md §79)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from hotkeys.detector.domain.figures import percent_of_limit, shown, whole


def test_a_rate_a_hair_under_the_threshold_never_reads_as_the_threshold() -> None:
    assert (shown(799.97), percent_of_limit(799.97, 1000), whole(799.97), whole(79.997)) == (799.9, 79.9, "799", "79")
    assert (shown(800.0), percent_of_limit(800.0, 1000), whole(800.0), whole(percent_of_limit(800, 1000))) == (
        800.0,
        80.0,
        "800",
        "80",
    )
    assert whole(12_345.9) == "12,345"


@given(
    rate=st.fractions(min_value=0, max_value=100_000).map(lambda f: Fraction(round(f * 1000), 1000)),
    limit=st.integers(min_value=1, max_value=10_000),
    percent=st.integers(min_value=1, max_value=1_000),
)
def test_the_shown_percent_reaches_a_whole_percent_exactly_when_the_rate_does(
    rate: Fraction, limit: int, percent: int
) -> None:
    # (exact arithmetic as the oracle: the rate is a multiple of a thousandth, as a counted rate over a span is not,
    # but as close to a threshold as a float gets)
    reaches = rate * 100 / limit >= percent
    assert (percent_of_limit(float(rate), limit) >= percent) == reaches
    assert (int(whole(percent_of_limit(float(rate), limit)).replace(",", "")) >= percent) == reaches
