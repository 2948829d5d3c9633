"""Forms of the dashboard, most of them generated from a JSON schema.

``schema_form(schema, ...)`` turns the JSON schema of a workflow's input type or of a request's
response type (``catalog.value_schema``) into a Django form: one field per property, with the
property's type, bounds, choices, default and description. Properties too complex for a single
input (nested objects, lists of objects) get a small JSON editor of their own, and a schema that
is not an object at all, or an operator who prefers it, gets one raw JSON editor for the whole
value. Either way the value is validated by the services, whose ``InputError``-style messages
(``{"items.0.qty": "..."}``) are put back beside the field they name with ``apply_errors``.

These are the pieces several pages use; a form of one page lives beside that page's views
(``runs/forms.py``, ``approvals/forms.py``, ``operations/forms.py``).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django import forms
from django.utils import timezone

from dashboard.services import validation

__all__ = [
    "JsonField",
    "SchemaFieldsForm",
    "SchemaJsonForm",
    "apply_errors",
    "day_start",
    "schema_form",
    "schema_is_simple",
]

JSON_ROWS = 12
_OMIT = object()


class JsonField(forms.CharField):
    """A textarea holding JSON; ``clean`` returns the parsed value."""

    def __init__(self, *, rows: int = 4, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": rows, "spellcheck": "false"}))
        kwargs.setdefault("strip", True)
        super().__init__(**kwargs)
        self.widget.attrs.update({"data-json-validate": "", "autocomplete": "off"})
        self.widget.attrs.setdefault("class", "code")

    def prepare_value(self, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)

    def clean(self, value: Any) -> Any:
        text = super().clean(value)
        if text in (None, ""):
            return _OMIT
        try:
            parsed = validation.parse_json(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from None
        except RecursionError:
            raise forms.ValidationError("Not valid JSON: nested too deeply.") from None
        # The escapes "\u0000" and "\ud800", NaN, Infinity and 1e309 parse, but the database
        # cannot store them: refused here, beside the field, naming where they are.
        found = validation.unstorable(parsed)
        if found is not None:
            path, problem = found
            raise forms.ValidationError(f"{path}: {problem}." if path else f"The value {problem}.")
        return parsed


# ------------------------------------------------------------------------------ JSON schema


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(prop, dict) and "$ref" in prop and seen < 20:
        name = str(prop["$ref"]).rsplit("/", 1)[-1]
        target = defs.get(name)
        if not isinstance(target, dict):
            return {}
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
        seen += 1
    return prop if isinstance(prop, dict) else {}


def _object_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    resolved = _resolve(schema, schema.get("$defs") or {})
    if resolved.get("type") == "object" and isinstance(resolved.get("properties"), dict):
        return resolved
    return None


def schema_is_simple(schema: dict[str, Any]) -> bool:
    """Whether the schema can be edited as a form (an object with named properties)."""
    return _object_schema(schema or {}) is not None


def _nullable(prop: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    options = prop.get("anyOf")
    if not isinstance(options, list):
        return prop, False
    resolved = [_resolve(o, defs) for o in options]
    real = [o for o in resolved if o.get("type") != "null"]
    if len(real) == 1 and len(resolved) == 2:
        inner = {**real[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
        return inner, True
    return prop, False


def _bounds(prop: dict[str, Any], cast: type) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    if "minimum" in prop:
        bounds["min_value"] = cast(prop["minimum"])
    if "maximum" in prop:
        bounds["max_value"] = cast(prop["maximum"])
    if "exclusiveMinimum" in prop and cast is int:
        bounds["min_value"] = int(prop["exclusiveMinimum"]) + 1
    if "exclusiveMaximum" in prop and cast is int:
        bounds["max_value"] = int(prop["exclusiveMaximum"]) - 1
    return bounds


# The services validate with pydantic; the form says the same thing in the same words, so an
# operator reads one message whether the form, the API or the browser caught the value.
SAME_MESSAGES = {
    "required": "Field required",
    "min_value": "Input should be greater than or equal to %(limit_value)s",
    "max_value": "Input should be less than or equal to %(limit_value)s",
    "min_length": "String should have at least %(limit_value)d characters",
    "max_length": "String should have at most %(limit_value)d characters",
}


def _schema_field(prop: dict[str, Any], *, required: bool, defs: dict[str, Any]) -> forms.Field:
    prop = _resolve(prop, defs)
    prop, nullable = _nullable(prop, defs)
    required = required and not nullable
    common: dict[str, Any] = {
        "required": required,
        "help_text": prop.get("description", ""),
        "error_messages": SAME_MESSAGES,
    }
    kind = prop.get("type")
    enum = prop.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int) for v in enum):
        choices = [("", "—")] if not required else []
        choices += [(str(v), str(v)) for v in enum]
        coerce = int if all(type(v) is int for v in enum) else str
        return forms.TypedChoiceField(choices=choices, coerce=coerce, empty_value=None, **common)
    if kind == "string" and prop.get("format") != "binary":
        field: forms.Field = forms.CharField(
            max_length=prop.get("maxLength"),
            min_length=prop.get("minLength"),
            strip=False,
            **common,
        )
        if (prop.get("maxLength") or 0) > 200:
            field.widget = forms.Textarea(attrs={"rows": 3, "maxlength": prop["maxLength"]})
        return field
    if kind == "integer":
        field = forms.IntegerField(**_bounds(prop, int), **common)
        field.error_messages["invalid"] = "Input should be a valid integer"
        return _said_in_the_browser(field)
    if kind == "number":
        field = forms.FloatField(**_bounds(prop, float), **common)
        field.error_messages["invalid"] = "Input should be a valid number"
        field.widget.attrs["step"] = "any"
        return _said_in_the_browser(field)
    if kind == "boolean":
        if nullable:
            return forms.NullBooleanField(**{**common, "required": False})
        return forms.BooleanField(**{**common, "required": False})
    return JsonField(rows=4, **common)


def _said_in_the_browser(field: forms.Field) -> forms.Field:
    """The messages for the bounds, on the input, for static/js/field_messages.js to show
    instead of the browser's own wording."""
    attrs = field.widget.attrs
    for code, bound in (("min_value", "min"), ("max_value", "max")):
        limit = getattr(field, code, None)
        if limit is not None:
            attrs[f"data-msg-{bound}"] = SAME_MESSAGES[code] % {"limit_value": limit}
    if field.required:
        attrs["data-msg-required"] = SAME_MESSAGES["required"]
    attrs["data-msg-invalid"] = field.error_messages["invalid"]
    return field


class SchemaFieldsForm(forms.Form):
    """One field per property of an object schema; ``value()`` gives the JSON object."""

    mode = "form"

    def __init__(
        self,
        schema: dict[str, Any],
        *args: Any,
        exclude: tuple[str, ...] = (),
        defaults: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        defs = schema.get("$defs") or {}
        obj = _object_schema(schema) or {"properties": {}}
        required = set(obj.get("required") or ())
        defaults = defaults or {}
        for name, prop in obj["properties"].items():
            if name in exclude or not isinstance(prop, dict):
                continue
            has_default = "default" in prop or name in defaults
            field = _schema_field(prop, required=name in required and not has_default, defs=defs)
            field.label = prop.get("title") or str(name).replace("_", " ").capitalize()
            initial = defaults.get(name, prop.get("default"))
            if initial is not None:
                field.initial = initial
            self.fields[name] = field

    def value(self) -> dict[str, Any]:
        """The cleaned data as the JSON the services expect; blank optional fields are left
        out so the type's own defaults apply."""
        out: dict[str, Any] = {}
        for name, field in self.fields.items():
            value = self.cleaned_data.get(name)
            if value is _OMIT:
                continue
            if (
                value in (None, "")
                and not field.required
                and not isinstance(field, forms.BooleanField)
            ):
                continue
            out[name] = value
        return out


class SchemaJsonForm(forms.Form):
    """The whole value as one JSON document (complex schemas, or by choice)."""

    mode = "json"
    json = JsonField(rows=JSON_ROWS, label="JSON", required=False)

    def __init__(
        self, schema: dict[str, Any], *args: Any, defaults: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.schema = schema
        if defaults is not None:
            self.fields["json"].initial = defaults
        description = (schema or {}).get("description") or ""
        self.fields["json"].help_text = description or "The value as JSON."

    def value(self) -> Any:
        value = self.cleaned_data.get("json")
        return {} if value is _OMIT else value


def accepts_text(schema: dict[str, Any]) -> bool:
    """Whether a plain string is one of the values the schema takes (an agent workflow's start,
    ``str | Message | list[...]``), so that a person can type it as words, not as JSON."""
    if not isinstance(schema, dict):
        return False
    options = schema.get("anyOf")
    if isinstance(options, list):
        return any(isinstance(o, dict) and o.get("type") == "string" for o in options)
    return schema.get("type") == "string" and schema.get("format") != "binary"


class SchemaTextForm(SchemaJsonForm):
    """A message typed as text, for a value that may be a plain string; the JSON editor (by
    choice) still takes the other shapes."""

    mode = "form"

    def __init__(
        self, schema: dict[str, Any], *args: Any, defaults: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(schema, *args, defaults=None, **kwargs)
        self.fields["json"] = forms.CharField(
            label="Message",
            required=True,
            strip=True,
            widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "true"}),
            help_text=(schema or {}).get("description")
            or "What to ask: the workflow's agents read it as the user's message.",
            initial=defaults if isinstance(defaults, str) else None,
        )

    def value(self) -> Any:
        return self.cleaned_data.get("json") or ""


def schema_form(
    schema: dict[str, Any],
    *,
    data: Any = None,
    mode: str = "form",
    prefix: str = "input",
    exclude: tuple[str, ...] = (),
    defaults: Any = None,
) -> SchemaFieldsForm | SchemaJsonForm:
    """A fields form for an object schema (unless ``mode == "json"``), else a JSON editor."""
    if mode != "json" and accepts_text(schema):
        return SchemaTextForm(schema, data, prefix=prefix, defaults=defaults)
    if mode != "json" and schema_is_simple(schema):
        field_defaults = defaults if isinstance(defaults, dict) else None
        return SchemaFieldsForm(
            schema, data, prefix=prefix, exclude=exclude, defaults=field_defaults
        )
    return SchemaJsonForm(schema, data, prefix=prefix, defaults=defaults)


def apply_errors(form: forms.Form, errors: dict[str, str]) -> None:
    """Put services' per-path messages beside the fields they name (``items.0.qty`` goes to
    ``items``); what names no field becomes a form error."""
    for path, message in errors.items():
        head, _, rest = str(path).partition(".")
        text = f"{rest}: {message}" if rest else str(message)
        if head in form.fields and head != "__root__":
            form.add_error(head, text)
        elif "json" in form.fields:
            form.add_error("json", f"{path}: {message}" if path != "__root__" else str(message))
        else:
            form.add_error(None, f"{path}: {message}" if path != "__root__" else str(message))


def day_start(day: dt.date | None, *, plus_days: int = 0) -> dt.datetime | None:
    """Midnight of ``day`` in the current time zone (the date inputs mean local days)."""
    if day is None:
        return None
    moment = dt.datetime.combine(day + dt.timedelta(days=plus_days), dt.time())
    return timezone.make_aware(moment)
