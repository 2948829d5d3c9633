"""The Tokens page: a signed-in user's API tokens, a form for a new one, and revocation.

A new token's text is in the answer to the form's POST and nowhere else: not in a redirect,
the session or a message, so reloading the page does not show it again. Creation and
revocation go through ``services.tokens``, which check who may do what and audit both; the
list is ``selectors.token_rows`` (everyone's for an Admin).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard import selectors, services
from dashboard.access import tokens
from dashboard.web.access import page_view
from dashboard.web.operations.crud import refusal_status
from dashboard.web.tokens.forms import TokenForm

PAGE = "dashboard/tokens.html"


def _page(
    request: HttpRequest,
    form: TokenForm | None = None,
    *,
    status: int = 200,
    created: Any = None,
    error: str = "",
) -> HttpResponse:
    context: dict[str, Any] = {
        "nav_section": "tokens",
        "form": form or TokenForm(max_days=tokens.max_days()),
        "rows": selectors.token_rows(request.user),
        "everyone": services.can(request.user, "token_admin"),
        "allowed_scopes": services.allowed_scopes(request.user),  # type: ignore[arg-type]
        "created": created,
        "error": error,
    }
    return render(request, PAGE, context, status=status)


@page_view("GET", "POST")
def token_list(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request)
    form = TokenForm(request.POST, max_days=tokens.max_days())
    if not form.is_valid():
        return _page(request, form, status=422)
    try:
        token, text = services.token_create(
            request.user,  # type: ignore[arg-type]
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            days=form.cleaned_data["days"],
            user=request.user,
        )
    except services.ServiceError as exc:
        if exc.errors:
            form.add_service_errors(exc.errors)
        else:
            form.add_error(None, exc.message)
        return _page(request, form, status=refusal_status(exc))
    response = _page(request, created={"token": token, "text": text})
    response["Cache-Control"] = "no-store"  # the token's text must not be kept anywhere
    return response


@page_view("POST")
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = services.token_revoke(token_id, user=request.user)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    messages.success(request, f"Token {token.name!r} revoked: it opens nothing from now on.")
    return redirect("dashboard:tokens")
