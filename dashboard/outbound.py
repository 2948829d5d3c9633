"""Every HTTP request the server sends on an operator's behalf, through one guarded client.

Alert rules, approval webhooks, Slack hooks and single sign-on make the server call URLs an
Admin typed. Left unchecked, that is server-side request forgery: one stolen Admin session and
``http://169.254.169.254/latest/meta-data/`` or ``http://127.0.0.1:5432/`` is called from inside
the network. So a URL is checked where it enters (``check_url``, on the form that saves it) and
again where it is used (``send``), and a send:

- resolves the host and refuses it unless **every** address it resolves to is public: loopback,
  private, link-local (the metadata services), shared (100.64/10), multicast, reserved and
  unspecified addresses are refused, in IPv4 and IPv6, and an IPv6 address that carries an IPv4
  one (``::ffff:127.0.0.1``, 6to4, NAT64, Teredo) is judged by the address it carries. Decimal,
  octal and hex IPv4 forms (``2130706433``, ``0177.0.0.1``) resolve to what they mean first;
- connects to the address it checked, never resolving again (no DNS rebinding between check and
  connect), and for HTTPS still verifies the certificate against the host's name;
- checks every redirect's target the same way, up to ``MAX_REDIRECTS``;
- gives up after ``timeout`` seconds in all, and reads at most ``max_bytes`` of the answer.

``SUPERSTEP_OUTBOUND_ALLOW`` admits internal targets on purpose: host names, addresses or
networks (``hooks.internal``, ``10.20.0.0/16``). Nothing else bypasses the check.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from django.conf import settings

__all__ = [
    "Answer",
    "OutboundError",
    "OutboundRefused",
    "Target",
    "check_url",
    "refusal",
    "send",
]

MAX_REDIRECTS = 5
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 1 << 20

type Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# getaddrinfo, swappable so that tests can say what a name resolves to.
type Resolver = Callable[[str, int], list[str]]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class OutboundError(Exception):
    """A request that could not be sent or answered: the sentence says why."""


class OutboundRefused(OutboundError, ValueError):
    """A URL the server will not call: it says which address and why, and how to allow it."""


@dataclass(frozen=True, slots=True)
class Target:
    """A URL checked for sending: its parts and the address to connect to."""

    url: str
    scheme: str
    host: str
    port: int
    path: str  # with the query
    address: str


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str  # the last one, after redirects
    redirects: list[str] = field(default_factory=list)


def _resolve(host: str, port: int) -> list[str]:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundError(f"{host} could not be resolved ({exc})") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in found))


_resolver: Resolver = _resolve


def use_resolver(resolver: Resolver | None) -> None:
    """Resolve names with ``resolver`` (None: the system's). For tests that make a name point
    where an attacker would."""
    global _resolver
    _resolver = resolver or _resolve


def _carried(address: Address) -> Address:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4, Teredo), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
    return address


def _why_refused(address: Address) -> str | None:
    """Why the server must not call ``address`` (None: it is a public address)."""
    inner = _carried(address)
    if inner is not address:
        reason = _why_refused(inner)
        return f"it carries {inner}, {reason}" if reason else None
    for test, kind in (
        ("is_unspecified", "the unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address (where cloud metadata services answer)"),
        ("is_private", "a private address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
    ):
        if getattr(address, test):
            return kind
    if not address.is_global:
        return "not a public address"
    return None


def _allowed(host: str, address: Address, allow: Iterable[str]) -> bool:
    for item in allow:
        item = item.strip().lower()
        if not item:
            continue
        if item == host.lower():
            return True
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            continue
        if address.version == network.version and address in network:
            return True
    return False


def _allow_list() -> list[str]:
    return list(getattr(settings, "SUPERSTEP_OUTBOUND_ALLOW", []))


def check_url(url: str, *, allow: Iterable[str] | None = None) -> Target:
    """The target ``url`` names, if the server may call it; else ``OutboundRefused`` with a
    sentence fit for a form. Resolves the host (``OutboundError`` when it does not resolve)."""
    allow = _allow_list() if allow is None else list(allow)
    if not isinstance(url, str) or not url or len(url) > 2000:
        raise OutboundRefused("the URL is missing or longer than 2,000 characters")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"{url!r} is not a valid URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise OutboundRefused(f"{url} is refused: only http and https URLs are called")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused(f"{url} is refused: put credentials in a secret, not in the URL")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused(f"{url} is refused: it names no host")
    port = port or (443 if scheme == "https" else 80)
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in _resolver(host, port)]
    if not addresses:
        raise OutboundError(f"{host} resolves to no address")
    for address in addresses:
        reason = _why_refused(address)
        if reason and not _allowed(host, address, allow):
            shown = host if str(address) == host else f"{host} ({address})"
            raise OutboundRefused(
                f"{url} is refused: {shown} is {reason}; an administrator can admit it on"
                " purpose with SUPERSTEP_OUTBOUND_ALLOW"
            )
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(url, scheme, host, port, path, str(addresses[0]))


def refusal(url: str) -> str | None:
    """What a form says of ``url`` when an Admin saves it: the refusal's sentence, or None.
    A name that does not resolve from here today is let through (it may from the workers, or
    tomorrow): ``send`` checks it again, as it resolves then."""
    try:
        check_url(url)
    except OutboundRefused as exc:
        return f"{exc}."
    except OutboundError:
        return None
    return None


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the checked address while the request names the host."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
        self._address = target.address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def send(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Answer:
    """Send one request to ``url`` through the checks above and return its answer, whatever
    its status. ``OutboundRefused`` for a target the server must not call (the first URL or a
    redirect's), ``OutboundError`` for one that failed (refused, timed out, too large)."""
    deadline = time.monotonic() + timeout
    redirects: list[str] = []
    method = method.upper()
    while True:
        target = check_url(url)
        left = deadline - time.monotonic()
        if left <= 0:
            raise OutboundError(f"{url} did not answer within {timeout:g} s")
        kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
        connection = kind(target, left)
        try:
            connection.request(method, target.path, body=body, headers=dict(headers or {}))
            response = connection.getresponse()
            status = response.status
            answer_headers = {name.lower(): value for name, value in response.getheaders()}
            data = response.read(max_bytes + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise OutboundError(f"{url} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            connection.close()
        if len(data) > max_bytes:
            raise OutboundError(f"{url} answered more than {max_bytes:,} bytes")
        location = answer_headers.get("location")
        if status in _REDIRECTS and location:
            if len(redirects) >= MAX_REDIRECTS:
                raise OutboundError(f"{url} redirected more than {MAX_REDIRECTS} times")
            url = urllib.parse.urljoin(url, location)
            redirects.append(url)
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, body = "GET", None  # what browsers and requests do
            continue
        return Answer(status, answer_headers, data, url, redirects)
