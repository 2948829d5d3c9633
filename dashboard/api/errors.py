"""One error format for every refusal: ``{"error": "why", "errors": {"field": "problem"}}``.

django-ninja's own answers (``{"detail": ...}``, 422 for invalid input, a text 405) are replaced
here, so a client sees the same shape whether a schema, a service or the CSRF check refused:
400 names the field, 401 asks for credentials, 403 is a role or CSRF refusal, 404 an unknown id,
409 an illegal transition saying why, 413 a body over ``MAX_BODY_BYTES``. ``JsonBodyParser``
keeps the body rules the schemas cannot express: at most ``MAX_BODY_BYTES``, a JSON object, not
nested too deeply, and nothing the database cannot store (NUL characters, lone surrogates, NaN,
infinities and numbers that overflow a float; ``services.validation``), each refusal naming the
field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.defaults import bad_request as django_bad_request
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from dashboard import services
from dashboard.access import rate_limits
from dashboard.services import validation

__all__ = [
    "MAX_BODY_BYTES",
    "TOO_LARGE_TEMPLATE",
    "JsonBodyParser",
    "MethodNotAllowed",
    "NotAuthenticated",
    "PayloadTooLarge",
    "bad_request",
    "csrf_failure",
    "error_response",
    "install_error_handlers",
]

AUTHENTICATION_REQUIRED = "authentication required (session or Bearer token)"

TOO_LARGE_TEMPLATE = "request_too_large.html"
MAX_BODY_BYTES = 1024 * 1024
"""The largest request body the API accepts (1 MiB). A run's input, a decision or an edited
fork state is far smaller; bodies of megabytes are refused with 413 instead of being parsed.
Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MiB), the pages' limit, stays the bound on what
is read at all: above it the body is refused unread, Content-Length or not (chunked)."""


class NotAuthenticated(services.ServiceError):
    """Credentials were sent but do not authenticate anyone (a bad or revoked token)."""

    status = 401


class MethodNotAllowed(services.ServiceError):
    status = 405

    def __init__(self, method: str, allowed: list[str]) -> None:
        super().__init__(f"method {method} not allowed; use {', '.join(allowed)}")
        self.allowed = allowed


def error_response(status: int, message: str, errors: dict[str, str] | None = None) -> JsonResponse:
    body: dict[str, Any] = {"error": message}
    if errors:
        body["errors"] = errors
    return JsonResponse(body, status=status)


class PayloadTooLarge(services.ServiceError):
    status = 413

    def __init__(self) -> None:
        super().__init__(
            f"the request body is larger than the API's limit of {MAX_BODY_BYTES} bytes",
            errors={"body": f"larger than {MAX_BODY_BYTES} bytes"},
        )


class JsonBodyParser(Parser):
    """ninja's JSON parser plus the body rules; refusals are ``InvalidInput`` naming the field."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        raw = request.body
        if len(raw) > MAX_BODY_BYTES:
            raise PayloadTooLarge()
        try:
            body = validation.parse_json(raw)
        except ValueError:  # UnicodeDecodeError included
            raise services.InvalidInput(
                "the request body is not valid JSON", errors={"body": "invalid JSON"}
            ) from None
        except RecursionError:
            raise services.InvalidInput(
                "the request body is nested too deeply", errors={"body": "nested too deeply"}
            ) from None
        if not isinstance(body, dict):
            raise services.InvalidInput(
                "the request body must be a JSON object", errors={"body": "not an object"}
            )
        for name, value in body.items():
            field = validation.printable(name) or "body"
            validation.require_storable(name, field=field)
            validation.require_storable(value, field=field)
        return body


def _field_errors(errors: list[dict[str, Any]]) -> dict[str, str]:
    """ninja's error locations, e.g. ``("body", "payload", "workflow", 0)`` or
    ``("query", "limit")``, reduced to the field a client sent."""
    found: dict[str, str] = {}
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        source, rest = (loc[0], loc[1:]) if loc else ("body", [])
        if source == "body":
            rest = rest[1:]  # the view's parameter name, not something the client sent
        field = rest[0] if rest else "body"
        message = str(error.get("msg", "invalid"))
        if not rest and error.get("type") == "missing":
            message = "required (a JSON object)"
        found.setdefault(field, message)
    return found


def _on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    if any(str(next(iter(e.get("loc", ())), "")) == "path" for e in exc.errors):
        # A path whose ids cannot even be read names nothing.
        return error_response(404, "no such resource")
    errors = _field_errors(exc.errors)
    message = "; ".join(f"{field}: {problem}" for field, problem in errors.items())
    return error_response(400, message or "invalid request", errors)


def _on_service_error(request: HttpRequest, exc: services.ServiceError) -> HttpResponse:
    response = error_response(exc.status, exc.message, exc.errors)
    if isinstance(exc, MethodNotAllowed):
        response["Allow"] = ", ".join(exc.allowed)
    return response


def _on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps what the parser raised ("Cannot parse request body"): answer with the cause.
    if isinstance(exc.__cause__, services.ServiceError):
        return _on_service_error(request, exc.__cause__)
    return error_response(exc.status_code, str(exc))


def _on_request_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    # Above DATA_UPLOAD_MAX_MEMORY_SIZE Django refuses to read the body at all.
    return _on_service_error(request, PayloadTooLarge())


def _on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(401, AUTHENTICATION_REQUIRED)


class CsrfRefused(Exception):
    """A session request failed Django's CSRF check; ``response`` is ``csrf_failure``'s."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__("CSRF check failed")
        self.response = response


def _on_csrf_refused(request: HttpRequest, exc: CsrfRefused) -> HttpResponse:
    return exc.response


def _on_rate_limited(request: HttpRequest, exc: rate_limits.RateLimited) -> HttpResponse:
    response = error_response(429, str(exc))
    response["Retry-After"] = str(exc.retry_after)
    return response


def install_error_handlers(api: NinjaAPI) -> None:
    handlers: list[tuple[type[Exception], Callable[[HttpRequest, Any], HttpResponse]]] = [
        (ValidationError, _on_validation_error),
        (services.ServiceError, _on_service_error),
        (AuthenticationError, _on_authentication_error),
        (HttpError, _on_http_error),
        (CsrfRefused, _on_csrf_refused),
        (RequestDataTooBig, _on_request_too_big),
        (rate_limits.RateLimited, _on_rate_limited),
    ]
    for exception, handler in handlers:
        api.add_exception_handler(exception, handler)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: the API answers a refused CSRF check in JSON like every other
    refusal (pages keep Django's page)."""
    if not request.path.startswith("/api/"):
        return django_csrf_failure(request, reason)
    return error_response(
        403, f"CSRF check failed ({reason}); send the X-CSRFToken header or use a Bearer token"
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: Django answers a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (whoever read
    it: the CSRF check, a form, ninja) with its generic 400 page. It is 413 here, in JSON under
    ``/api/`` and as a page that says what the limit is elsewhere; other 400s keep Django's."""
    if not isinstance(exception, RequestDataTooBig):
        return django_bad_request(request, exception)
    if request.path.startswith("/api/"):
        return _on_service_error(request, PayloadTooLarge())
    context = {"limit": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}
    return render(request, TOO_LARGE_TEMPLATE, context, status=413)
