"""dashboard/config/asgi.py: HTTP to Django, websockets only from allowed origins."""

from __future__ import annotations

import threading

from channels.routing import ProtocolTypeRouter
from channels.testing import HttpCommunicator, WebsocketCommunicator

from dashboard.config.asgi import application


def test_asgi_application_routes_http_and_websockets() -> None:
    assert isinstance(application, ProtocolTypeRouter)
    assert set(application.application_mapping) == {"http", "websocket"}


async def test_asgi_http_reaches_django() -> None:
    communicator = HttpCommunicator(
        application, "GET", "/admin/", headers=[(b"host", b"testserver")]
    )

    response = await communicator.get_response()

    assert response["status"] == 302  # anonymous: redirected to the admin login
    headers = {name.lower(): value for name, value in response["headers"]}
    assert headers[b"location"].startswith(b"/admin/login/")
    assert b"content-security-policy" in headers


async def test_asgi_websocket_from_a_foreign_origin_is_refused() -> None:
    communicator = WebsocketCommunicator(
        application, "/ws/runs/", headers=[(b"origin", b"https://evil.example")]
    )

    connected, _ = await communicator.connect()

    assert not connected


def test_importing_asgi_starts_no_threads_when_background_services_are_off() -> None:
    names = [thread.name for thread in threading.enumerate()]

    assert not [name for name in names if name.startswith("superstep-periodic-")]
