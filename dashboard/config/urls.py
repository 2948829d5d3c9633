"""Root URLconf (``ROOT_URLCONF``). Each package adds its ``include()`` here; views live there."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", include("dashboard.api.urls")),
    # The operator's pages: "/" is the runs list; login/ and logout/ keep Django's names.
    path("", include("dashboard.web.urls_auth")),
    path("", include("dashboard.web.urls")),
]
