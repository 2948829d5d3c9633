"""Amounts a person types: a cost, a price, a number of tokens. The runs list's filters, the
API's, an alert rule's threshold and the price table read them here, so ``NaN``, ``-1``,
``1e999`` or ``cheap`` get the same clear refusal wherever they are typed, before a query or a
save could fail on them.

Each reader adds its message to ``errors`` under the field's name and returns what it could
read (the caller raises one ``InvalidInput`` naming every bad field).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

__all__ = ["MAX_COST", "MAX_TOKENS", "decimal_amount", "read_cost", "read_tokens"]

# A run's cost column holds 12 integer digits; no run costs a billion.
MAX_COST = Decimal(1_000_000_000)
# PositiveBigIntegerField holds 2**63; no run reads a quadrillion tokens.
MAX_TOKENS = 10**15
_COST_PLACES = 6
_TEXT_LIMIT = 40  # "1000000000.000000" is 17 characters; beyond 40 nothing is a number


def decimal_amount(
    value: object,
    field: str,
    errors: dict[str, str],
    *,
    noun: str,
    example: str,
    maximum: Decimal,
    places: int,
    unit: str = "",
) -> Decimal:
    """A finite, non-negative decimal of at most ``places`` places and at most ``maximum``."""
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
            raise InvalidOperation
        text = str(value).strip()
        if len(text) > _TEXT_LIMIT:
            raise InvalidOperation
        amount = Decimal(text)
    except InvalidOperation:
        errors[field] = f"Enter {noun}, such as {example}."
        return Decimal(0)
    if not amount.is_finite():
        errors[field] = f"Enter a finite {noun.removeprefix('a ').removeprefix('an ')}."
    elif amount < 0:
        errors[field] = f"{noun.capitalize()} cannot be negative."
    elif amount > maximum:
        errors[field] = f"At most {maximum:,}{unit}."
    elif amount != amount.quantize(Decimal(1).scaleb(-places)):
        errors[field] = f"At most {_PLACES_WORDS.get(places, places)} decimal places."
    return amount


_PLACES_WORDS = {4: "four", 6: "six"}


def read_cost(value: object, field: str, errors: dict[str, str]) -> Decimal:
    """A cost in the price table's currency (as a run's cost column holds it)."""
    return decimal_amount(
        value,
        field,
        errors,
        noun="an amount",
        example="0.25",
        maximum=MAX_COST,
        places=_COST_PLACES,
    )


def read_tokens(value: object, field: str, errors: dict[str, str]) -> int:
    """A whole number of tokens from 0 to ``MAX_TOKENS``."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, int) and not isinstance(text, bool):
        number = text
    elif isinstance(text, str) and 0 < len(text) <= _TEXT_LIMIT and text.isascii():
        try:
            number = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            errors[field] = "Enter a whole number of tokens, such as 1000."
            return 0
    else:
        errors[field] = "Enter a whole number of tokens, such as 1000."
        return 0
    if number < 0:
        errors[field] = "A number of tokens cannot be negative."
    elif number > MAX_TOKENS:
        errors[field] = f"At most {MAX_TOKENS:,} tokens."
    return number
