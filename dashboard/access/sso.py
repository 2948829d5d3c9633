"""Single sign-on with OpenID Connect, on mozilla-django-oidc (settings: ``SUPERSTEP_OIDC_*``).

The library runs the authorization-code flow (state, nonce, PKCE, the ID token's signature).
What it leaves to us, and what this module adds:

- **Who is who.** A provider account is its ``(issuer, sub)`` pair, kept in
  ``SingleSignOnIdentity``; never its e-mail address, which a provider may let users change or
  may not verify, and which would hand a local account (an admin's, say) to whoever claims it.
- **What the token says.** ``aud`` must name this client and ``iss`` the configured issuer
  (the library checks neither), and the user-info answer must be about the same ``sub``.
- **Roles.** The provider's groups (``SUPERSTEP_OIDC_GROUPS_CLAIM``) map to our roles through
  ``SUPERSTEP_OIDC_ROLES``, replaced at every sign-in, so removing someone from a group at the
  provider takes their role here at their next sign-in. Nobody gets superuser from a provider.
  An account with no mapped group is refused, and loses the roles it had.
- **Discovery.** The endpoints come from the issuer's ``/.well-known/openid-configuration``
  (``endpoints``), fetched at the first sign-in and kept for the process; any endpoint set
  explicitly wins. The document must name the configured issuer, as OpenID Connect Discovery
  requires, or no sign-in starts.
- **Failures.** A provider that is down, slow or answers nonsense sends the user back to the
  sign-in page with a sentence, never a 500; every sign-in and refusal is audited.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, Group, User
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from dashboard import outbound
from dashboard.access import audit, authz
from dashboard.access.authz import ROLE_NAMES
from dashboard.models import AuditEntry, SingleSignOnIdentity, WorkflowGrant

__all__ = [
    "ROLE_NAMES",
    "CallbackView",
    "ProviderBackend",
    "RoleMap",
    "SignInView",
    "enabled",
    "endpoints",
    "provider_name",
    "role_map",
    "take_error",
]

logger = logging.getLogger(__name__)

# Where the callback leaves a refusal for the sign-in page to show (the session survives it).
ERROR_SESSION_KEY = "superstep_sso_error"
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


def enabled() -> bool:
    return bool(getattr(settings, "SUPERSTEP_OIDC_ENABLED", False))


def provider_name() -> str:
    return str(getattr(settings, "SUPERSTEP_OIDC_PROVIDER_NAME", "") or "single sign-on")


@dataclass(frozen=True)
class RoleMap:
    """Provider group → the roles it grants, each for every workflow ("") or for one; and the
    role of those in no mapped group (if any)."""

    groups: dict[str, list[tuple[str, str]]]
    default: str = ""

    def _granted(self, provider_groups: list[str]) -> set[tuple[str, str]]:
        granted = {grant for g in provider_groups for grant in self.groups.get(g, [])}
        if not granted and self.default:
            granted = {(self.default, "")}
        return granted

    def roles_for(self, provider_groups: list[str]) -> list[str]:
        """The roles held for every workflow, least powerful first."""
        roles = {role for role, workflow in self._granted(provider_groups) if not workflow}
        return [r for r in ROLE_NAMES if r in roles]

    def grants_for(self, provider_groups: list[str]) -> list[tuple[str, str]]:
        """The roles held for one workflow each, as (role, workflow)."""
        return sorted((r, w) for r, w in self._granted(provider_groups) if w)


def role_map() -> RoleMap:
    """Read ``SUPERSTEP_OIDC_ROLES`` ("group=Role" or "group=Role@workflow", comma-separated;
    a group may be named more than once) and ``SUPERSTEP_OIDC_DEFAULT_ROLE``."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for item in getattr(settings, "SUPERSTEP_OIDC_ROLES", []):
        group, sep, granted = item.partition("=")
        role, _, workflow = granted.partition("@")
        group, role, workflow = group.strip(), role.strip(), workflow.strip()
        if not sep or not group or role not in ROLE_NAMES or ("@" in granted and not workflow):
            raise ImproperlyConfigured(
                f"SUPERSTEP_OIDC_ROLES item {item!r} must be group=Role or group=Role@workflow,"
                " Role one of " + ", ".join(ROLE_NAMES)
            )
        groups.setdefault(group, []).append((role, workflow))
    default = str(getattr(settings, "SUPERSTEP_OIDC_DEFAULT_ROLE", "") or "").strip()
    if default and default not in ROLE_NAMES:
        raise ImproperlyConfigured(
            f"SUPERSTEP_OIDC_DEFAULT_ROLE={default!r} is not one of " + ", ".join(ROLE_NAMES)
        )
    return RoleMap(groups, default)


# Our setting -> the discovery document's key.
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
# The endpoints this server calls itself (the authorization endpoint is the browser's).
SERVER_CALLED = ("OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT", "OIDC_OP_JWKS_ENDPOINT")
_discovered: dict[str, dict[str, str]] = {}  # issuer -> its endpoints, once fetched
_discovering = threading.Lock()


class DiscoveryFailed(Exception):
    """The issuer's discovery document could not be had or does not describe it."""


def endpoints() -> dict[str, str]:
    """The provider's four endpoints by setting name: those set explicitly, the others from
    the issuer's discovery document (fetched once per process, and only if one is missing).

    Raises:
        DiscoveryFailed: an endpoint is missing and discovery did not find it.
    """
    given = {name: str(getattr(settings, name, "") or "") for name in ENDPOINTS}
    if all(given.values()):
        return given
    found = _discover(settings.SUPERSTEP_OIDC_ISSUER)
    return {name: value or found[name] for name, value in given.items()}


def _discover(issuer: str) -> dict[str, str]:
    with _discovering:
        if issuer not in _discovered:
            _discovered[issuer] = _fetch_configuration(issuer)
        return _discovered[issuer]


def _fetch_configuration(issuer: str) -> dict[str, str]:
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        # Through the guarded client, as every URL the server calls (dashboard/outbound.py).
        answer = outbound.send("GET", url, timeout=getattr(settings, "OIDC_TIMEOUT", 10))
        if answer.status != 200:
            raise DiscoveryFailed(f"{url} answered {answer.status}")
        document = json.loads(answer.body)
    except (outbound.OutboundError, ValueError) as exc:
        raise DiscoveryFailed(f"{url}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        raise DiscoveryFailed(f"{url} does not describe the issuer {issuer!r}")
    found = {name: document.get(key) for name, key in ENDPOINTS.items()}
    missing = [ENDPOINTS[name] for name, value in found.items() if not isinstance(value, str)]
    if missing:
        raise DiscoveryFailed(f"{url} names no " + ", ".join(missing))
    return {name: str(value) for name, value in found.items()}


class ProviderAnswer(Exception):
    """The provider answered a server-to-server call with an error or with what does not
    parse; the message names the endpoint and what came back."""


def _provider_call(
    url: str, method: str, *, body: bytes | None = None, headers: dict[str, str] | None = None
) -> outbound.Answer:
    timeout = getattr(settings, "OIDC_TIMEOUT", None) or outbound.DEFAULT_TIMEOUT
    answer = outbound.send(method, url, body=body, headers=headers, timeout=timeout)
    if answer.status != 200:
        raise ProviderAnswer(f"{url} answered {answer.status}: {answer.body[:200]!r}")
    return answer


def _parsed(url: str, answer: outbound.Answer) -> dict[str, Any]:
    try:
        document = json.loads(answer.body)
    except ValueError as exc:
        raise ProviderAnswer(f"{url} answered what is not JSON") from exc
    if not isinstance(document, dict):
        raise ProviderAnswer(f"{url} answered JSON that is not an object")
    return document


def _json_answer(
    url: str, method: str, *, body: bytes | None = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    return _parsed(url, _provider_call(url, method, body=body, headers=headers))


def take_error(request: HttpRequest) -> str:
    """The refusal the last sign-in attempt left for this browser, once."""
    return str(request.session.pop(ERROR_SESSION_KEY, "") or "")


class SignInRefused(Exception):
    """The provider vouched for someone this dashboard will not let in; the text is for them.

    Not a SuspiciousOperation: the library swallows those into a silent failure."""


class ProviderBackend(OIDCAuthenticationBackend):  # type: ignore[misc]  # untyped library
    """Authenticates the provider's callback; every other sign-in passes it by."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._enabled = enabled()
        if self._enabled:
            super().__init__(*args, **kwargs)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if not self._enabled or request is None:
            return None
        if not (request.GET.get("code") and request.GET.get("state")):
            return None  # not the provider's callback (a password sign-in, say)
        found = endpoints()  # DiscoveryFailed reaches CallbackView, which says so
        for name in SERVER_CALLED:
            # Each is called through the guarded client below; checked first, so that one it
            # refuses is refused before the code is exchanged, whichever call comes first.
            outbound.check_url(found[name])
        self.OIDC_OP_TOKEN_ENDPOINT = found["OIDC_OP_TOKEN_ENDPOINT"]
        self.OIDC_OP_USER_ENDPOINT = found["OIDC_OP_USER_ENDPOINT"]
        self.OIDC_OP_JWKS_ENDPOINT = found["OIDC_OP_JWKS_ENDPOINT"]
        user: User | None = super().authenticate(request, **kwargs)
        return user

    # The library calls the three endpoints with requests, which resolves the host again when
    # it connects; through the guarded client each call connects to the address it checked.

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        form = dict(payload)
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        if self.get_settings("OIDC_TOKEN_USE_BASIC_AUTH", False):
            pair = f"{form.get('client_id', '')}:{form.pop('client_secret', '')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        body = urllib.parse.urlencode(form).encode("ascii")
        return _json_answer(self.OIDC_OP_TOKEN_ENDPOINT, "POST", body=body, headers=headers)

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        url = self.OIDC_OP_USER_ENDPOINT
        answer = _provider_call(url, "GET", headers={"Authorization": f"Bearer {access_token}"})
        if answer.headers.get("content-type", "").lower().startswith("application/jwt"):
            return self.verify_token(answer.body.decode("ascii"))  # claims sent as a signed JWT
        return _parsed(url, answer)

    def retrieve_matching_jwk(self, token: str) -> jwt.PyJWK:
        keys = _json_answer(self.OIDC_OP_JWKS_ENDPOINT, "GET").get("keys")
        header = jwt.get_unverified_header(token)
        check_kid = bool(getattr(settings, "OIDC_VERIFY_KID", True))
        for key in keys if isinstance(keys, list) else []:
            if not isinstance(key, dict):
                continue
            if check_kid and key.get("kid") != header.get("kid"):
                continue
            if "alg" in key and key["alg"] != header.get("alg"):
                continue
            return jwt.PyJWK(key)
        raise SuspiciousOperation("the provider publishes no key that signed this token")

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SignInRefused("the provider's token was issued to another application")
        if payload.get("iss") != settings.SUPERSTEP_OIDC_ISSUER:
            raise SignInRefused("the token was not issued by the configured provider")
        if not isinstance(payload.get("sub"), str) or not payload["sub"]:
            raise SignInRefused("the provider's token names no account")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> User:
        claims: dict[str, Any] = self.get_userinfo(access_token, id_token, payload)
        if not isinstance(claims, dict) or claims.get("sub") != payload["sub"]:
            raise SignInRefused("the provider described a different account than it signed in")
        # The ID token's own claims count too: some providers put groups only there.
        claims = {**payload, **claims}
        return _sign_in(payload["iss"], payload["sub"], claims)


def _provider_groups(claims: dict[str, Any]) -> list[str]:
    value = claims.get(settings.SUPERSTEP_OIDC_GROUPS_CLAIM, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [g for g in value if isinstance(g, str)]


def _sign_in(issuer: str, subject: str, claims: dict[str, Any]) -> User:
    provider_groups = _provider_groups(claims)
    mapping = role_map()
    roles = mapping.roles_for(provider_groups)
    grants = mapping.grants_for(provider_groups)
    details = {
        "subject": subject,
        "provider_groups": provider_groups[:50],
        "roles": roles,
        "workflow_roles": [f"{role}@{workflow}" for role, workflow in grants],
    }
    with transaction.atomic():
        identity = (
            SingleSignOnIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None and not roles and not grants:
            # No account is created for someone who may not come in.
            audit.record(
                AnonymousUser(),
                "sso_sign_in",
                outcome=AuditEntry.DENIED,
                target=issuer[:300],
                details=details,
            )
            user = None
        else:
            if identity is None:
                user = User.objects.create_user(_free_username(claims, subject))
                user.set_unusable_password()
                identity = SingleSignOnIdentity(user=user, issuer=issuer, subject=subject)
            user = identity.user
            _copy_profile(user, claims)
            user.is_staff = "Admin" in roles
            user.save()
            # Replace, not add: the provider is where this account's roles are decided, and
            # someone it no longer puts in any mapped group keeps nothing here.
            user.groups.set(Group.objects.filter(name__in=roles))
            _replace_grants(user, grants)
            identity.last_sign_in_at = timezone.now()
            identity.save()
            audit.record(
                user,
                "sso_sign_in",
                outcome=AuditEntry.OK if roles or grants else AuditEntry.DENIED,
                target=issuer[:300],
                details=details,
            )
    if user is None or not (roles or grants):
        raise SignInRefused(
            "your account has no role in this dashboard; ask an administrator to map one of "
            "your groups to a role"
        )
    return user


def _replace_grants(user: User, grants: list[tuple[str, str]]) -> None:
    """The account's roles for named workflows become exactly those its groups map to."""
    by_name = {g.name: g for g in Group.objects.filter(name__in={role for role, _ in grants})}
    WorkflowGrant.objects.filter(user=user).delete()
    WorkflowGrant.objects.bulk_create(
        [
            WorkflowGrant(user=user, role=by_name[role], workflow_name=workflow)
            for role, workflow in grants
            if role in by_name
        ]
    )


def _copy_profile(user: User, claims: dict[str, Any]) -> None:
    def text(name: str, limit: int) -> str:
        value = claims.get(name)
        return value[:limit] if isinstance(value, str) else ""

    user.email = text("email", 254) or user.email
    user.first_name = text("given_name", 150) or user.first_name
    user.last_name = text("family_name", 150) or user.last_name


def _free_username(claims: dict[str, Any], subject: str) -> str:
    """A readable username nobody has: the provider's preferred one, else the e-mail's, else
    the subject; with a number added when a local account already holds it."""
    for claim in ("preferred_username", "email", "nickname"):
        value = claims.get(claim)
        if isinstance(value, str) and _USERNAME_UNSAFE.sub("", value):
            base = _USERNAME_UNSAFE.sub("", value)[:140]
            break
    else:
        base = "sso-" + _USERNAME_UNSAFE.sub("", subject)[:136]
    name, n = base, 1
    while User.objects.filter(username__iexact=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


class SignInView(OIDCAuthenticationRequestView):  # type: ignore[misc]  # untyped library
    """``/oidc/authenticate/``: off (404) unless single sign-on is configured."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not enabled():
            raise Http404("single sign-on is not configured")
        super().__init__(*args, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            self.OIDC_OP_AUTH_ENDPOINT = endpoints()["OIDC_OP_AUTHORIZATION_ENDPOINT"]
        except DiscoveryFailed as exc:
            logger.warning("single sign-on discovery failed: %s", exc)
            request.session[ERROR_SESSION_KEY] = (
                f"Signing in with {provider_name()} failed: it did not answer as expected;"
                " please try again later."
            )
            return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        response: HttpResponse = super().get(request)
        return response


class CallbackView(OIDCAuthenticationCallbackView):  # type: ignore[misc]  # untyped library
    """``/oidc/callback/``: the library's flow, with every failure turned into a sentence on the
    sign-in page instead of a 400 or a 500."""

    @property
    def success_url(self) -> str:
        # As the sign-in form does (web/views_auth.py): approvers land on the inbox unless the
        # sign-in started with a ``next``.
        if not self.request.session.get("oidc_login_next") and authz.decides_only(
            self.request.user
        ):
            return reverse("dashboard:approval_inbox")
        url: str = super().success_url
        return url

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("single sign-on is not configured")
        try:
            response: HttpResponse = super().get(request)
        except SignInRefused as exc:
            return self._failed(request, str(exc))
        except outbound.OutboundRefused as exc:
            logger.warning("single sign-on refused to call the provider: %s", exc)
            return self._failed(
                request,
                f"{provider_name()} is configured at an address this server does not call;"
                " tell an administrator",
            )
        except (SuspiciousOperation, jwt.PyJWTError) as exc:
            logger.warning("single sign-on refused: %s", exc)
            return self._failed(request, "the sign-in could not be verified; please try again")
        except (
            DiscoveryFailed,
            ProviderAnswer,
            outbound.OutboundError,
            requests.RequestException,
            ValueError,
            KeyError,
            TypeError,
        ) as exc:
            # ValueError covers a token or JSON answer that does not parse.
            logger.warning("single sign-on failed: %s: %s", type(exc).__name__, exc)
            return self._failed(
                request, f"{provider_name()} did not answer as expected; please try again later"
            )
        if not request.user.is_authenticated and ERROR_SESSION_KEY not in request.session:
            error = request.GET.get("error_description") or request.GET.get("error")
            request.session[ERROR_SESSION_KEY] = f"{provider_name()} did not sign you in" + (
                f": {error[:200]}" if isinstance(error, str) and error else ""
            )
        return response

    def _failed(self, request: HttpRequest, reason: str) -> HttpResponse:
        request.session[ERROR_SESSION_KEY] = f"Signing in with {provider_name()} failed: {reason}."
        return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
