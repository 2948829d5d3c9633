"""Content-Security-Policy for the dashboard, built on Django's own CSP support (Django >= 6.0).

Django ships what we need: ``SECURE_CSP`` (the policy), a per-request lazy nonce, the
``django.template.context_processors.csp`` processor that puts it in templates as
``csp_nonce`` (our templates write it with ``{% csp_nonce_attr %}``), and the ``csp_override``
view decorators. We use it rather than a home-made header so those all keep working.

The one thing a static policy cannot say is "websockets to this host". CSP Level 3 makes
``'self'`` match ``ws:``/``wss:`` on the same host, and current Chromium, Firefox and Safari do
so; older engines did not, and the live pages are useless without their socket. So
``ContentSecurityPolicyMiddleware`` below adds the request's own ``ws://host`` or ``wss://host``
to ``connect-src`` and otherwise leaves the work to Django's middleware.

Settings that use it (exact names):

    MIDDLEWARE: put "dashboard.web.csp.ContentSecurityPolicyMiddleware" where Django's
        "django.middleware.csp.ContentSecurityPolicyMiddleware" would go (after
        SecurityMiddleware). Do not list both.
    SECURE_CSP = dashboard.web.csp.SECURE_CSP
    TEMPLATES[...]["OPTIONS"]["context_processors"] += ["django.template.context_processors.csp"]

Django's system check W027 (nonce in policy but no context processor) only looks for its own
middleware path, so that context processor must not be forgotten: without it every page's
scripts are blocked.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.middleware.csp import ContentSecurityPolicyMiddleware as DjangoCSPMiddleware
from django.utils.csp import CSP

SECURE_CSP: dict[str, list[str]] = {
    "default-src": [CSP.SELF],
    # Only our own files, and each <script> must carry this response's nonce: an injected
    # script tag has neither. No 'unsafe-eval': htmx runs with allowEval=false.
    "script-src": [CSP.SELF, CSP.NONCE],
    # No inline styles at all: templates use classes, never style="", and htmx is told not to
    # inject its indicator <style>.
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}


class ContentSecurityPolicyMiddleware(DjangoCSPMiddleware):
    """Django's CSP middleware, plus this host's websocket origin in ``connect-src``."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        sentinel = object()
        config: Any = getattr(response, "_csp_config", sentinel)
        if config is sentinel:
            config = settings.SECURE_CSP
        source = websocket_source(request)
        if config and source and "connect-src" in config:
            # A copy: the settings dict is shared by every request.
            connect = [*config["connect-src"], source]
            response._csp_config = {**config, "connect-src": connect}  # type: ignore[attr-defined]
        return super().process_response(request, response)


def websocket_source(request: HttpRequest) -> str | None:
    """``wss://host[:port]`` for a secure request, ``ws://…`` otherwise; None for a bad host.

    ``get_host()`` has validated the host against ALLOWED_HOSTS and its syntax (letters,
    digits, dots, dashes, an optional port or a bracketed IPv6), so it cannot smuggle a ``;``
    or a space into the header.
    """
    try:
        host = request.get_host()
    except DisallowedHost:
        return None
    return f"{'wss' if request.is_secure() else 'ws'}://{host}"
