"""dashboard.web.forms: forms generated from JSON schemas, and errors put back beside fields."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict

from dashboard import catalog
from dashboard.demo.workflows import ApprovalDecision, ReturnReplaceRequest
from dashboard.web.forms import (
    SchemaFieldsForm,
    SchemaJsonForm,
    apply_errors,
    schema_form,
    schema_is_simple,
)
from dashboard.web.runs.forms import RunFilterForm

NESTED: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Item": {"type": "object", "properties": {"sku": {"type": "string"}}},
        "Size": {"enum": ["s", "m", "l"], "type": "string"},
    },
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "size": {"$ref": "#/$defs/Size", "default": "m"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "flag": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None},
        "count": {"type": "integer", "exclusiveMinimum": 0},
    },
    "required": ["items", "count"],
}


def test_schema_form_builds_typed_fields_with_bounds_defaults_and_help() -> None:
    form = schema_form(catalog.value_schema(ApprovalDecision), exclude=("approved",))
    assert isinstance(form, SchemaFieldsForm)
    assert list(form.fields) == ["discount_percent", "note"]
    discount = form.fields["discount_percent"]
    assert (discount.min_value, discount.max_value, discount.initial) == (0, 100, 0)
    assert discount.help_text == "Discount on the refund" and not discount.required
    assert form.fields["note"].max_length == 500


def test_schema_form_uses_defaults_and_returns_the_json_object() -> None:
    schema = catalog.value_schema(ReturnReplaceRequest)
    form = schema_form(
        schema, data=QueryDict("input-order_id=ORD-9&input-refund_amount=12.5&input-work_ms=")
    )
    assert form.is_valid(), form.errors
    # Blank optional fields are left out so the type's own defaults apply.
    assert form.value() == {"order_id": "ORD-9", "refund_amount": 12.5}
    assert form.fields["item_sku"].initial == "KETTLE-2L"


def test_complex_properties_get_a_json_editor_of_their_own() -> None:
    form = schema_form(NESTED)
    assert isinstance(form, SchemaFieldsForm)
    assert form.fields["items"].widget.attrs["data-json-validate"] == ""
    assert [c[0] for c in form.fields["size"].choices] == ["", "s", "m", "l"]  # optional: "—" first
    assert form.fields["count"].min_value == 1
    data = QueryDict('input-items=[{"sku": "A"}]&input-size=l&input-count=2&input-flag=true')
    bound = schema_form(NESTED, data=data)
    assert bound.is_valid(), bound.errors
    assert bound.value() == {"items": [{"sku": "A"}], "size": "l", "count": 2, "flag": True}


def test_invalid_json_in_a_field_is_an_error_beside_that_field() -> None:
    bound = schema_form(NESTED, data=QueryDict("input-items=[oops&input-count=1"))
    assert not bound.is_valid()
    assert "Not valid JSON" in bound.errors["items"][0]


def test_raw_json_mode_and_non_object_schemas_get_one_editor() -> None:
    assert not schema_is_simple({"type": "integer"})
    form = schema_form({"type": "integer"}, data=QueryDict("input-json=42"))
    assert isinstance(form, SchemaJsonForm) and form.is_valid() and form.value() == 42
    as_json = schema_form(NESTED, mode="json", defaults={"count": 1})
    assert isinstance(as_json, SchemaJsonForm) and as_json.fields["json"].initial == {"count": 1}


def test_apply_errors_puts_service_messages_beside_the_field_they_name() -> None:
    form = schema_form(NESTED, data=QueryDict("input-items=[]&input-count=1"))
    assert form.is_valid()
    apply_errors(form, {"items.0.sku": "field required", "count": "too small", "__root__": "bad"})
    assert form.errors["items"] == ["0.sku: field required"]
    assert form.errors["count"] == ["too small"]
    assert form.non_field_errors() == ["bad"]
    raw = schema_form(NESTED, mode="json", data=QueryDict("input-json={}"))
    assert raw.is_valid()
    apply_errors(raw, {"count": "Field required"})
    assert raw.errors["json"] == ["count: Field required"]


@pytest.mark.parametrize("query", ["status=nope", "created_from=yesterday", "sort=random"])
def test_run_filters_ignore_invalid_values(query: str) -> None:
    form = RunFilterForm(QueryDict(query + "&q=abc"), workflows=["squares"])
    assert form.value("q") == "abc"
    assert form.value(query.split("=")[0]) is None
