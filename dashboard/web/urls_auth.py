"""``login`` and ``logout`` at the root, without a namespace (Django's auth looks them up so)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.web import views_auth

urlpatterns: list[URLPattern] = [
    path("login/", views_auth.login, name="login"),
    path("logout/", views_auth.logout, name="logout"),
]
