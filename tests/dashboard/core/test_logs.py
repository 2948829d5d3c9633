"""dashboard/core/logs.py: JSON log lines, the run fields a worker binds, and the setting that
selects them (``SUPERSTEP_LOG_FORMAT``, in a child process with the production settings'
loading, as tests/dashboard/config/test_settings.py does)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from dashboard import services
from dashboard.config.celery import _log_format
from dashboard.core import logs
from dashboard.execution import embedded
from tests.dashboard.config.test_settings import run_manage

EnvBuilder = Callable[..., dict[str, str]]


def record(message: str, *args: Any, exc_info: Any = None) -> logging.LogRecord:
    return logging.LogRecord(
        "dashboard.test", logging.WARNING, __file__, 1, message, args, exc_info
    )


def formatted(entry: logging.LogRecord) -> dict[str, Any]:
    line = logs.JsonFormatter().format(entry)
    assert "\n" not in line
    parsed: dict[str, Any] = json.loads(line)
    return parsed


def test_a_record_is_one_json_object_on_one_line() -> None:
    entry = formatted(record("two\nlines about %s", "ünïcode"))

    assert set(entry) == {"time", "level", "logger", "message"}
    assert entry["message"] == "two\nlines about ünïcode"
    assert (entry["level"], entry["logger"]) == ("WARNING", "dashboard.test")
    assert entry["time"].endswith("+00:00")


def test_an_exception_travels_inside_the_object() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        entry = formatted(record("failed", exc_info=sys.exc_info()))

    assert "ValueError: boom" in entry["exception"]


def test_bound_fields_join_each_line_until_unbound() -> None:
    outer = logs.bind(run_id="r-1", workflow="squares")
    inner = logs.bind(superstep=3, workflow=None)
    assert formatted(record("x"))["run_id"] == "r-1"
    assert "workflow" not in formatted(record("x"))
    assert formatted(record("x"))["superstep"] == 3
    logs.unbind(inner)
    assert logs.bound() == {"run_id": "r-1", "workflow": "squares"}
    logs.unbind(outer)
    assert logs.bound() == {}


def test_the_current_span_gives_the_trace_id_when_none_is_bound() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        entry = formatted(record("inside"))
    assert entry["trace_id"] == f"{span.get_span_context().trace_id:032x}"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.formatter = logs.JsonFormatter()
        self.lines: list[dict[str, Any]] = []

    def emit(self, entry: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(entry)))


@pytest.fixture
def captured() -> Iterator[Lines]:
    handler = Lines()
    logger = logging.getLogger("tests.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)


def test_lines_logged_while_a_worker_drives_a_run_name_it_and_its_superstep(
    services_transactional_db: str, captured: Lines, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = services.checkpoint_commit

    def commit(lease: Any, checkpoint: Any, *args: Any) -> None:
        logging.getLogger("tests.logs").info("commit %s", checkpoint.iteration_count)
        real(lease, checkpoint, *args)

    monkeypatch.setattr(services, "checkpoint_commit", commit)
    run = services.run_start(workflow_name="squares", input={"limit": 2, "work_ms": 0})
    assert embedded.wait_for_background_tasks(30)

    fields = [(e.get("run_id"), e.get("workflow"), e.get("superstep")) for e in captured.lines]
    assert fields == [
        (str(run.pk), "squares", None),  # the entry checkpoint, before any superstep
        (str(run.pk), "squares", 1),
        (str(run.pk), "squares", 2),
        (str(run.pk), "squares", 3),
    ]
    assert logs.bound() == {}


def test_celery_handlers_take_the_json_format_when_it_is_selected(settings: Any) -> None:
    logger = logging.getLogger("tests.celery-like")
    logger.addHandler(logging.StreamHandler(io.StringIO()))

    settings.SUPERSTEP_LOG_FORMAT = "plain"
    _log_format(logger)
    assert not isinstance(logger.handlers[0].formatter, logs.JsonFormatter)
    settings.SUPERSTEP_LOG_FORMAT = "json"
    _log_format(logger)
    assert isinstance(logger.handlers[0].formatter, logs.JsonFormatter)


SAY = "import logging; logging.getLogger('dashboard').warning('hi')"


def test_the_setting_selects_json_lines_and_plain_text_stays_the_default(
    subprocess_env: EnvBuilder,
) -> None:
    plain = run_manage(subprocess_env(), "shell", "-c", SAY)
    as_json = run_manage(subprocess_env(SUPERSTEP_LOG_FORMAT="JSON"), "shell", "-c", SAY)
    wrong = run_manage(subprocess_env(SUPERSTEP_LOG_FORMAT="xml"), "check")

    assert plain.returncode == 0 and plain.stderr.rstrip().endswith("WARNING dashboard: hi")
    assert as_json.returncode == 0, as_json.stderr
    (line,) = [json.loads(text) for text in as_json.stderr.splitlines() if text.startswith("{")]
    assert (line["level"], line["logger"], line["message"]) == ("WARNING", "dashboard", "hi")
    assert wrong.returncode != 0 and "SUPERSTEP_LOG_FORMAT='xml'" in wrong.stderr
