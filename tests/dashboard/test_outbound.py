"""The guarded outbound client (dashboard/outbound.py): what the server refuses to call, on the
form that saves a URL and again at send time; the address it checked is the one it connects
to; every redirect is checked; the allow-list admits internal targets on purpose; time and
size are bounded."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import override_settings

from dashboard import outbound
from dashboard.core.errors import InvalidInput
from dashboard.models import AlertIncident, Notification
from dashboard.notifications import delivery
from dashboard.services import alerts


@pytest.fixture(autouse=True)
def nothing_allowed() -> Iterator[None]:
    """No allow-list (the test settings admit this machine for the other tests' receivers)."""
    with override_settings(SUPERSTEP_OUTBOUND_ALLOW=[]):
        yield


@pytest.fixture
def resolving() -> Iterator[Callable[[dict[str, list[str]]], None]]:
    """Make names resolve where a test says, as an attacker's DNS would."""
    system = outbound._resolve

    def point(names: dict[str, list[str]]) -> None:
        def resolve(host: str, port: int) -> list[str]:
            if host in names:
                return names[host]
            return system(host, port)  # addresses in every spelling, and the rest

        outbound.use_resolver(resolve)

    yield point
    outbound.use_resolver(None)


def refused(url: str) -> str:
    with pytest.raises(outbound.OutboundRefused) as caught:
        outbound.check_url(url)
    return str(caught.value)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:5432/", "a loopback address"),
        ("http://localhost/", "a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.5/admin", "a private address"),
        ("http://192.168.1.1/", "a private address"),
        ("http://100.100.100.200/latest/meta-data/", "not a public address"),
        ("http://224.0.0.1/", "a multicast address"),
        ("http://0.0.0.0:8000/", "the unspecified address"),
        ("http://[::1]/", "a loopback address"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fd00:ec2::254]/", "a private address"),
        ("http://2130706433/", "a loopback address"),  # 127.0.0.1 in decimal
        ("http://0177.0.0.1/", "a loopback address"),  # in octal
        ("http://0x7f.1/", "a loopback address"),  # in hex, two parts
    ],
)
def test_internal_addresses_are_refused_in_every_spelling(url: str, why: str) -> None:
    message = refused(url)
    assert why in message and "SUPERSTEP_OUTBOUND_ALLOW" in message


@pytest.mark.parametrize(
    ("url", "carried"),
    [
        ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
        ("http://[::ffff:a9fe:a9fe]/", "169.254.169.254"),
        ("http://[64:ff9b::7f00:1]/", "127.0.0.1"),  # NAT64
        ("http://[2002:7f00:1::]/", "127.0.0.1"),  # 6to4
    ],
)
def test_an_ipv6_address_is_judged_by_the_ipv4_address_it_carries(url: str, carried: str) -> None:
    assert f"it carries {carried}" in refused(url)


def test_a_name_that_resolves_to_loopback_is_refused(resolving: Any) -> None:
    resolving({"hooks.attacker.example": ["127.0.0.1"]})
    message = refused("https://hooks.attacker.example/x")
    assert "hooks.attacker.example (127.0.0.1) is a loopback address" in message


def test_a_name_with_one_internal_address_among_public_ones_is_refused(resolving: Any) -> None:
    resolving({"mixed.example": ["93.184.216.34", "10.1.2.3"]})
    assert "10.1.2.3" in refused("https://mixed.example/")


def test_a_public_name_is_pinned_to_the_address_it_was_checked_at(resolving: Any) -> None:
    resolving({"hooks.example": ["93.184.216.34"]})
    target = outbound.check_url("https://hooks.example/in?x=1")
    assert (target.host, target.port, target.path, target.address) == (
        "hooks.example",
        443,
        "/in?x=1",
        "93.184.216.34",
    )


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "gopher://127.0.0.1:6379/_FLUSHALL", "ftp://example.com/", "//x/"],
)
def test_only_http_and_https_are_called(url: str) -> None:
    assert "only http and https" in refused(url)


def test_credentials_in_the_url_are_refused() -> None:
    assert "credentials" in refused("https://user:pw@example.com/")


def test_the_allow_list_admits_a_network_and_a_name_on_purpose(resolving: Any) -> None:
    resolving({"hooks.internal": ["10.9.8.7"]})
    with override_settings(SUPERSTEP_OUTBOUND_ALLOW=["10.20.0.0/16", "hooks.internal"]):
        assert outbound.check_url("http://10.20.1.2/").address == "10.20.1.2"
        assert outbound.check_url("http://hooks.internal/").address == "10.9.8.7"
        assert "10.21.0.1" in refused("http://10.21.0.1/")


class Server:
    """A local HTTP server whose answer a test chooses; records the Host header it got."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.hosts: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                server.hosts.append(str(self.headers.get("Host")))
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                answer(self)

            do_GET = do_POST = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(answer: Callable[[BaseHTTPRequestHandler], None]) -> Server:
        started.append(Server(answer))
        return started[-1]

    yield start
    for server in started:
        server.close()


def redirect_to(location: str) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


def ok(body: bytes = b"ok") -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def test_a_redirect_to_the_metadata_service_is_refused(serve: Any) -> None:
    server = serve(redirect_to("http://169.254.169.254/latest/meta-data/"))
    with (
        override_settings(SUPERSTEP_OUTBOUND_ALLOW=["127.0.0.1"]),
        pytest.raises(outbound.OutboundRefused, match="169.254.169.254 is a link-local"),
    ):
        outbound.send("POST", f"http://127.0.0.1:{server.port}/hook", body=b"{}")
    assert len(server.hosts) == 1  # the first hop was sent; the redirect never was


def test_a_checked_name_is_connected_to_at_its_address_without_resolving_again(
    serve: Any, resolving: Any
) -> None:
    server = serve(ok(b"hello"))
    # The name resolves once, through the test's resolver; the system's cannot resolve it, so a
    # second lookup at connect time would fail.
    resolving({"hooks.internal.test": ["127.0.0.1"]})
    with override_settings(SUPERSTEP_OUTBOUND_ALLOW=["hooks.internal.test"]):
        answer = outbound.send("GET", f"http://hooks.internal.test:{server.port}/ping")
    assert (answer.status, answer.body) == (200, b"hello")
    assert server.hosts == [f"hooks.internal.test:{server.port}"]


def test_redirects_within_the_allowed_targets_are_followed_and_reported(serve: Any) -> None:
    final = serve(ok())
    first = serve(redirect_to(f"http://127.0.0.1:{final.port}/there"))
    with override_settings(SUPERSTEP_OUTBOUND_ALLOW=["127.0.0.1"]):
        answer = outbound.send("GET", f"http://127.0.0.1:{first.port}/here")
    assert answer.status == 200 and answer.redirects == [f"http://127.0.0.1:{final.port}/there"]


def test_an_answer_larger_than_the_bound_is_refused(serve: Any) -> None:
    server = serve(ok(b"x" * 5000))
    with (
        override_settings(SUPERSTEP_OUTBOUND_ALLOW=["127.0.0.1"]),
        pytest.raises(outbound.OutboundError, match="more than 1,000 bytes"),
    ):
        outbound.send("GET", f"http://127.0.0.1:{server.port}/", max_bytes=1000)


def test_a_server_that_never_answers_is_given_up_on(serve: Any) -> None:
    release = threading.Event()
    server = serve(lambda handler: release.wait(30))
    try:
        with (
            override_settings(SUPERSTEP_OUTBOUND_ALLOW=["127.0.0.1"]),
            pytest.raises(outbound.OutboundError, match="timed out|did not answer"),
        ):
            outbound.send("GET", f"http://127.0.0.1:{server.port}/", timeout=0.5)
    finally:
        release.set()


# ------------------------------------------------------------------------------ where URLs enter


@pytest.mark.django_db
def test_an_alert_rule_with_an_internal_webhook_is_refused_with_a_sentence() -> None:
    spec = alerts.AlertRuleSpec(
        name="meta",
        condition="run_failed",
        webhook_url="http://169.254.169.254/latest/meta-data/",
        slack_webhook_url="http://[::ffff:127.0.0.1]:5432/",
    )
    with pytest.raises(InvalidInput) as caught:
        alerts.alert_rule_create(spec)
    errors = caught.value.errors
    assert "link-local" in errors["webhook_url"]
    assert "it carries 127.0.0.1" in errors["slack_webhook_url"]


@pytest.mark.django_db
def test_a_name_that_does_not_resolve_today_is_saved_and_checked_at_send_time() -> None:
    rule = alerts.alert_rule_create(
        alerts.AlertRuleSpec(
            name="later", condition="run_failed", webhook_url="https://hooks.nowhere.invalid/"
        )
    )
    assert rule.webhook_url == "https://hooks.nowhere.invalid/"


@pytest.mark.django_db
def test_a_webhook_that_turned_internal_is_refused_at_send_time_and_the_reason_kept(
    resolving: Any,
) -> None:
    resolving({"hooks.example": ["93.184.216.34"]})
    rule = alerts.alert_rule_create(
        alerts.AlertRuleSpec(name="x", condition="run_failed", webhook_url="http://hooks.example/")
    )
    incident = AlertIncident.objects.create(rule=rule, subject="run x", summary="a run failed")
    note = Notification.objects.create(
        incident=incident,
        kind=Notification.WEBHOOK,
        target=rule.webhook_url,
        event="alert_opened",
        payload={"summary": "s"},
    )
    resolving({"hooks.example": ["10.0.0.7"]})  # the record changed after the rule was saved

    assert delivery.deliver(note.pk) is False

    note.refresh_from_db()
    assert note.sent_at is None
    assert "OutboundRefused" in note.last_error and "10.0.0.7" in note.last_error
