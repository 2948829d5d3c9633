"""Root URLconf. Feature modules add their ``include()`` here; views live in their modules."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", include("dashboard.api")),
    # The operator's pages: "/" is the runs list; login/ and logout/ keep Django's names.
    path("", include("dashboard.web.urls_auth")),
    path("", include("dashboard.web.urls")),
]
