"""Sign in and out with Django's own views (templates/registration/login.html), plus the
single sign-on button and the sentence a refused SSO sign-in left (``dashboard.access.sso``).

The login page does not bounce signed-in users away: a user whose role may not open a page is
sent here with ``next`` and must see why, not loop between the two pages.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views

from dashboard.access import sso


class _LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_enabled"] = sso.enabled()
        context["sso_provider"] = sso.provider_name()
        context["sso_error"] = sso.take_error(self.request)
        return context


login = _LoginView.as_view()
logout = auth_views.LogoutView.as_view()
