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
from django.urls import reverse

from dashboard.access import authz, sso


class _LoginView(auth_views.LoginView):
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
