"""``manage.py workflows [--json]``: the registered workflows, where each comes from, the type
each takes as input, the answer each of its requests takes, and its graph signature hash."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard import catalog
from dashboard.catalog.sources import Registration


class Command(BaseCommand):
    help = (
        "List the registered workflows: source, input type, response type per request type, "
        "graph signature hash."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="one JSON document, with schemas"
        )

    def handle(self, *args: Any, as_json: bool, **options: Any) -> None:
        described = [describe(registration) for registration in catalog.load().values()]
        if as_json:
            self.stdout.write(json.dumps({"workflows": described}, indent=2, ensure_ascii=False))
        else:
            self.write_text(described)
        broken = [item["name"] for item in described if item["error"]]
        if broken:
            raise CommandError(f"these workflows cannot be built: {', '.join(broken)}")

    def write_text(self, described: list[dict[str, Any]]) -> None:
        if not described:
            self.stdout.write(
                "No workflows are registered. Name a module in SUPERSTEP_WORKFLOWS or install a "
                "package with a 'superstep.workflows' entry point (see the README)."
            )
        for item in described:
            self.stdout.write(self.style.SUCCESS(item["name"]) + f"  ({item['source']})")
            self.stdout.write(f"  from:      {item['origin']}")
            self.stdout.write(f"  builder:   {item['builder']}")
            if item["error"]:
                self.stdout.write(self.style.ERROR(f"  error:     {item['error']}"))
                continue
            if item["description"]:
                self.stdout.write(f"  about:     {item['description']}")
            self.stdout.write(f"  input:     {item['input_type']}")
            for request in item["requests"]:
                self.stdout.write(
                    f"  request:   {request['request_type']} -> {request['response_type']}"
                    f"  (executor {request['executor']})"
                )
            self.stdout.write(f"  signature: {item['graph_signature_hash']}")
            for older in item["older_versions"]:
                self.stdout.write(f"  also kept: {older}  (an earlier version, for its runs)")


def describe(registration: Registration) -> dict[str, Any]:
    """What ``--json`` prints for one workflow; ``error`` says why it could not be built."""
    item: dict[str, Any] = {
        "name": registration.name,
        "source": registration.source,
        "origin": registration.origin,
        "builder": registration.target,
        "error": None,
    }
    try:
        workflow = catalog.describe(registration.name)
        requests = catalog.request_types(registration.name)
        input_type = catalog.input_type(registration.name)
        versions = list(catalog.versions(registration.name))
    except Exception as exc:  # noqa: BLE001 - an author's builder may raise anything; list the rest
        item["error"] = f"{type(exc).__name__}: {exc}"
        return item
    item.update(
        description=workflow.description or "",
        input_type=type_label(input_type),
        input_schema=catalog.value_schema(input_type),
        requests=[
            {
                "executor": request.executor,
                "request_type": type_label(request.request_type),
                "response_type": type_label(request.response_type),
                "response_schema": catalog.value_schema(request.response_type),
            }
            for request in requests
        ],
        graph_signature_hash=workflow.graph_signature_hash,
        # Earlier versions registered beside the current one, oldest first.
        older_versions=[v for v in versions if v != workflow.graph_signature_hash],
    )
    return item


def type_label(annotation: object) -> str:
    """``RefundItem``, ``int``, ``list[int]``: how the author wrote the type."""
    if isinstance(annotation, type):
        return annotation.__qualname__
    return str(annotation).replace("typing.", "")
