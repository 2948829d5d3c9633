"""``login`` and ``logout`` at the root, without a namespace (Django's auth looks them up so),
and single sign-on's ``/oidc/authenticate/`` and ``/oidc/callback/`` (404 unless configured)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.access import sso
from dashboard.web import views_auth

urlpatterns: list[URLPattern] = [
    path("login/", views_auth.login, name="login"),
    path("logout/", views_auth.logout, name="logout"),
    # Under the names mozilla-django-oidc reverses.
    path("oidc/authenticate/", sso.SignInView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", sso.CallbackView.as_view(), name="oidc_authentication_callback"),
]
