"""services.amounts: a typed cost or number of tokens reads, or is refused with a message
naming what is wrong; nothing raises, whatever is typed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.services import amounts


def cost(value: object) -> tuple[Decimal, str]:
    errors: dict[str, str] = {}
    found = amounts.read_cost(value, "cost", errors)
    return found, errors.get("cost", "")


def tokens(value: object) -> tuple[int, str]:
    errors: dict[str, str] = {}
    found = amounts.read_tokens(value, "tokens", errors)
    return found, errors.get("tokens", "")


@pytest.mark.parametrize(
    ("text", "read"),
    [("0", "0"), (" 2.5 ", "2.5"), ("0.000001", "0.000001"), ("1000000000", "1000000000")],
)
def test_read_cost_reads_a_decimal_of_at_most_six_places(text: str, read: str) -> None:
    assert cost(text) == (Decimal(read), "")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("NaN", "Enter a finite amount."),
        ("snan", "Enter a finite amount."),
        ("-Infinity", "Enter a finite amount."),
        ("-0.01", "An amount cannot be negative."),
        ("1000000000.000001", "At most 1,000,000,000."),
        ("1e400", "At most 1,000,000,000."),
        ("0.0000001", "At most six decimal places."),
        ("", "Enter an amount, such as 0.25."),
        ("1,5", "Enter an amount, such as 0.25."),
        ("9" * 41, "Enter an amount, such as 0.25."),
        (True, "Enter an amount, such as 0.25."),
        (None, "Enter an amount, such as 0.25."),
        ([1], "Enter an amount, such as 0.25."),
    ],
)
def test_read_cost_refuses_what_is_not_a_cost(value: object, says: str) -> None:
    assert cost(value)[1] == says


@pytest.mark.parametrize(
    ("value", "read", "says"),
    [
        ("1000", 1000, ""),
        ("1,000", 1000, ""),
        (12, 12, ""),
        ("-1", -1, "A number of tokens cannot be negative."),
        (10**15 + 1, 10**15 + 1, "At most 1,000,000,000,000,000 tokens."),
        ("1.5", 0, "Enter a whole number of tokens, such as 1000."),
        ("٣", 0, "Enter a whole number of tokens, such as 1000."),
        (False, 0, "Enter a whole number of tokens, such as 1000."),
        ("", 0, "Enter a whole number of tokens, such as 1000."),
    ],
)
def test_read_tokens_reads_a_whole_number_or_says_why_not(
    value: object, read: int, says: str
) -> None:
    assert tokens(value) == (read, says)


@given(st.one_of(st.text(max_size=60), st.floats(), st.integers(), st.decimals()))
def test_read_cost_never_raises_and_what_it_accepts_fits_the_column(value: object) -> None:
    found, says = cost(value)
    if not says:
        assert found.is_finite() and 0 <= found <= amounts.MAX_COST
        assert found == found.quantize(Decimal("0.000001"))


@given(st.one_of(st.text(max_size=60), st.integers()))
def test_read_tokens_never_raises_and_what_it_accepts_fits_the_column(value: object) -> None:
    found, says = tokens(value)
    if not says:
        assert 0 <= found <= amounts.MAX_TOKENS
