"""dashboard.web.csp: Django's CSP plus this host's websocket origin (no database needed)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template import Context, Template
from django.test import RequestFactory, override_settings
from django.views.decorators.csp import csp_override

from dashboard.web.csp import SECURE_CSP, ContentSecurityPolicyMiddleware


def page(request: HttpRequest) -> HttpResponse:
    nonce = request._csp_nonce  # type: ignore[attr-defined]
    return HttpResponse(
        Template("<script {% csp_nonce_attr %}></script>").render(Context({"csp_nonce": nonce}))
    )


def directives(header: str) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in header.split("; ")}


@override_settings(SECURE_CSP=SECURE_CSP, ALLOWED_HOSTS=["dash.example"])
def test_csp_middleware_sends_the_strict_policy_with_the_pages_nonce() -> None:
    request = RequestFactory().get("/", HTTP_HOST="dash.example:8000")
    response = ContentSecurityPolicyMiddleware(page)(request)
    policy = directives(response.headers["Content-Security-Policy"])
    nonce = response.content.decode().split('nonce="')[1].split('"')[0]
    assert policy["script-src"] == ["'self'", f"'nonce-{nonce}'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'", "ws://dash.example:8000"]
    assert policy["frame-ancestors"] == policy["object-src"] == policy["base-uri"] == ["'none'"]
    assert "'unsafe-inline'" not in str(policy) and "'unsafe-eval'" not in str(policy)


@override_settings(SECURE_CSP=SECURE_CSP, ALLOWED_HOSTS=["dash.example"])
def test_csp_middleware_uses_wss_for_secure_requests_and_nothing_for_a_bad_host() -> None:
    secure = RequestFactory().get("/", HTTP_HOST="dash.example", secure=True)
    header = ContentSecurityPolicyMiddleware(page)(secure).headers["Content-Security-Policy"]
    assert directives(header)["connect-src"] == ["'self'", "wss://dash.example"]
    bad = RequestFactory().get("/", HTTP_HOST="evil.example")
    header = ContentSecurityPolicyMiddleware(page)(bad).headers["Content-Security-Policy"]
    assert directives(header)["connect-src"] == ["'self'"]
    assert SECURE_CSP["connect-src"] == ["'self'"]  # the shared setting was not mutated


@override_settings(SECURE_CSP=SECURE_CSP, ALLOWED_HOSTS=["dash.example"])
def test_csp_middleware_respects_a_views_own_policy() -> None:
    view = csp_override({"default-src": ["'none'"]})(page)
    request = RequestFactory().get("/", HTTP_HOST="dash.example")
    header = ContentSecurityPolicyMiddleware(view)(request).headers["Content-Security-Policy"]
    assert header == "default-src 'none'"
