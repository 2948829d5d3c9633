"""Sign in and out with Django's own views (templates/registration/login.html), plus the
single sign-on button and the sentence a refused SSO sign-in left (``dashboard.access.sso``).

Without an explicit ``next``, people whose role decides requests but does not operate runs land
on the approval inbox, and everyone else on ``LOGIN_REDIRECT_URL`` (the runs list).

The login page does not bounce signed-in users away: a user whose role may not open a page is
sent here with ``next`` and must see why, not loop between the two pages.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from dashboard.access import authz, rate_limits, sso


class _LoginView(auth_views.LoginView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Before the password is checked: a guess refused here costs no hashing either.
        account = str(request.POST.get("username") or "").strip().lower()
        try:
            rate_limits.hit(
                "signin-address",
                str(request.META.get("REMOTE_ADDR") or ""),
                "SUPERSTEP_RATE_SIGNIN_ADDRESS",
                "sign-in attempts from your address",
            )
            rate_limits.hit(
                "signin-account",
                account,
                "SUPERSTEP_RATE_SIGNIN_ACCOUNT",
                "sign-in attempts for this account",
            )
        except rate_limits.RateLimited as exc:
            context = self.get_context_data(
                form=self.get_form_class()(request),
                rate_limited=f"Too many {exc.what}; try again in {exc.retry_after} s.",
            )
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(exc.retry_after)
            return response
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_enabled"] = sso.enabled()
        context["sso_provider"] = sso.provider_name()
        context["sso_error"] = sso.take_error(self.request)
        return context

    def get_default_redirect_url(self) -> str:
        # Only when the sign-in carries no safe ``next`` (get_success_url tries that first).
        if authz.decides_only(self.request.user):
            return reverse("dashboard:approval_inbox")
        return super().get_default_redirect_url()


login = _LoginView.as_view()
logout = auth_views.LogoutView.as_view()
