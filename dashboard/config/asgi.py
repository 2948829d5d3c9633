"""The ASGI entry point: ``daphne dashboard.config.asgi:application``.

HTTP goes to Django. Websockets must come from an allowed Origin (cross-site websocket
hijacking) and carry the session user; consumers then decide what that user may see.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.config.settings")

# Set up Django before importing anything that imports models (auth middleware, consumers).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.conf import settings

from dashboard.execution.embedded import start_background_services
from dashboard.web.live.routing import websocket_urlpatterns

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            # types-channels wants its own pattern type; Django's path() patterns are what
            # channels' documentation routes with.
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))  # type: ignore[arg-type]
        ),
    }
)

# A server process is the one place periodic jobs belong (the lease sweeper re-enqueues runs
# a dead process left behind). Tests import this module with the setting off.
if settings.SUPERSTEP_BACKGROUND_SERVICES:
    start_background_services()
