"""Root URLconf (``ROOT_URLCONF``). Each package adds its ``include()`` here; views live there."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView

# A body over DATA_UPLOAD_MAX_MEMORY_SIZE is 413 (JSON under /api/), not Django's generic 400.
handler400 = "dashboard.api.errors.bad_request"

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    # Browsers and crawlers ask for /favicon.ico whatever the pages declare.
    path("favicon.ico", RedirectView.as_view(url="/static/favicon.svg", permanent=True)),
    path("api/", include("dashboard.api.urls")),
    # Prometheus metrics, for a scraper with the metrics token or a staff user.
    path("", include("dashboard.observability.urls")),
    # The operator's pages: "/" is the runs list; login/ and logout/ keep Django's names.
    path("", include("dashboard.web.urls_auth")),
    path("", include("dashboard.web.urls")),
]
