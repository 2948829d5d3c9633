"""What this deployment runs: its workflows by name, and its periodic jobs.

* ``workflows``: the registered workflows, by name, built and described on demand, with their
  input and response types (JSON schemas for the forms, validation for the API);
* ``sources``: where they come from (entry points, ``SUPERSTEP_WORKFLOWS`` modules, settings,
  the demo), all imported when Django starts;
* ``sensitive``: the JSON paths a registration names as holding sensitive values;
* ``build_notes``: the engine's graph-validation notes, logged once per workflow version;
* ``periodic_jobs``: the periodic jobs and their intervals, declared once and free of Django
  (Celery beat's ``beat_schedule`` and the embedded threads both read it);
* ``tools``: what a workflow's agent tools tell the dashboard (their arguments are editable).

Callers use the lookups re-exported here: ``catalog.names()``, ``catalog.build(name)``.
"""

from dashboard.catalog.workflows import (
    InputError,
    RequestType,
    UnknownWorkflowError,
    build,
    current_version,
    default_input,
    describe,
    executor_ids,
    graph_document,
    input_schema,
    input_type,
    is_functional,
    load,
    names,
    registration,
    reload,
    request_types,
    response_type,
    to_json,
    type_label,
    unknown_fields,
    validate_value,
    value_schema,
    versions,
)

__all__ = [
    "InputError",
    "RequestType",
    "UnknownWorkflowError",
    "build",
    "current_version",
    "default_input",
    "describe",
    "executor_ids",
    "graph_document",
    "input_schema",
    "input_type",
    "is_functional",
    "load",
    "names",
    "registration",
    "reload",
    "request_types",
    "response_type",
    "to_json",
    "type_label",
    "unknown_fields",
    "validate_value",
    "value_schema",
    "versions",
]
