"""The tracer provider's resource: the operator's service name wins over ours.

The instrumentations it switches on are tested with real processes in
tests/dashboard/observability/test_tracing_celery.py.
"""

from __future__ import annotations

import pytest

from dashboard.config import telemetry


@pytest.fixture(autouse=True)
def no_operator_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)


def test_resource_names_the_service_superstep_by_default() -> None:
    attributes = telemetry.resource().attributes

    assert attributes["service.name"] == "superstep"
    assert attributes["telemetry.sdk.language"] == "python"  # the SDK's defaults stay


def test_resource_takes_the_service_name_from_otel_resource_attributes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "OTEL_RESOURCE_ATTRIBUTES", "service.name=payments-dashboard,deployment.environment=prod"
    )

    attributes = telemetry.resource().attributes

    assert attributes["service.name"] == "payments-dashboard"
    assert attributes["deployment.environment"] == "prod"


def test_resource_takes_otel_service_name_over_the_resource_attributes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes,team=ops")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-service-name")

    attributes = telemetry.resource().attributes

    assert attributes["service.name"] == "from-service-name"
    assert attributes["team"] == "ops"


def test_instrument_leaves_the_disabled_instrumentations_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "django, celery,psycopg")

    assert telemetry.instrument() == []
