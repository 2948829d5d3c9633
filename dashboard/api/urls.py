"""The JSON API (django-ninja), mounted under ``/api/`` by the root URLconf
(dashboard/config/urls.py), and its OpenAPI document at ``/api/openapi.json``.

The document is generated from the operations in ``views.py`` and needs the same
authentication as they do. No interactive docs page: ninja's Swagger page would need its
``ninja`` app installed for its static files and has not been checked against our CSP; any
OpenAPI viewer can read the document instead.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, path
from ninja import NinjaAPI
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from dashboard import services
from dashboard.api.alerts import router as alerts_router
from dashboard.api.audit import router as audit_router
from dashboard.api.auth import AUTH, describe_scopes
from dashboard.api.errors import (
    AUTHENTICATION_REQUIRED,
    MAX_BODY_BYTES,
    JsonBodyParser,
    MethodNotAllowed,
    error_response,
    install_error_handlers,
)
from dashboard.api.schedules import router as schedules_router
from dashboard.api.views import router

__all__ = ["api", "urlpatterns"]


class _Encoder(NinjaJSONEncoder):
    """Times with full precision and their offset (Django's encoder cuts to milliseconds)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, dt.datetime):
            return o.isoformat()
        return super().default(o)


class _Renderer(JSONRenderer):
    encoder_class = _Encoder


def _authenticated(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The OpenAPI document answers GET, to the same callers as the operations it describes."""

    @functools.wraps(view)
    def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            if request.method != "GET":  # first: only unsafe methods need a CSRF check
                raise MethodNotAllowed(request.method or "", ["GET"])
            if not any(auth(request) for auth in AUTH):
                return error_response(401, AUTHENTICATION_REQUIRED)
        except services.ServiceError as exc:
            return error_response(exc.status, exc.message, exc.errors)
        return view(request, *args, **kwargs)

    return inner


class _Api(NinjaAPI):
    """The document also says what scope of token each operation needs."""

    def get_openapi_schema(self, **kwargs: Any) -> Any:
        return describe_scopes(super().get_openapi_schema(**kwargs))


api = _Api(
    title="Superstep",
    version="1",
    description=(
        "Start, inspect and steer workflow runs; decide approval requests. Authenticate with "
        "`Authorization: Bearer <token>` (the Tokens page, or `manage.py create_api_token`; "
        "the `BearerToken` scheme says what its scopes allow) or the dashboard's "
        "session, which needs the `X-CSRFToken` header on POST. Request bodies are JSON "
        f"objects of at most {MAX_BODY_BYTES} bytes (413 beyond); NaN, Infinity, numbers that "
        "overflow a float, lone surrogates and NUL characters are refused (400 naming the "
        'field). Every refusal is `{"error": "...", "errors": {"field": "problem"}}`.'
    ),
    urls_namespace="api",
    auth=AUTH,
    parser=JsonBodyParser(),
    renderer=_Renderer(),
    openapi_url="/openapi.json",
    docs_url=None,
    docs_decorator=_authenticated,
)
install_error_handlers(api)
api.add_router("", router)
api.add_router("", schedules_router)
api.add_router("", alerts_router)
api.add_router("", audit_router)

urlpatterns: list[URLPattern | URLResolver] = [path("", api.urls)]
