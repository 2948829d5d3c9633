"""A small OpenID Connect provider on a real local port, for the single sign-on tests.

It speaks the authorization-code flow the dashboard uses (with PKCE and a nonce), signs ID
tokens with an RSA key of its own and publishes it as a JWKS, and describes itself at
``/.well-known/openid-configuration`` (OpenID Connect Discovery). A test says who signs in next
(``provider.next_account``) and may make the provider misbehave (``provider.misbehave``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "superstep-dashboard"
CLIENT_SECRET = "s3cret-for-tests"


@dataclass
class FakeProvider:
    base_url: str
    issuer: str
    key: rsa.RSAPrivateKey
    kid: str = "test-key-1"
    # The account the next /authorize signs in: claims for the ID token and user-info.
    next_account: dict[str, Any] = field(default_factory=dict)
    # "", "token_500", "wrong_audience", "wrong_issuer", "bad_signature", "other_sub",
    # "slow_token", "garbage_token", "deny", "discovery_other_issuer", "discovery_500"
    misbehave: str = ""
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_requests: int = 0
    discovery_requests: int = 0

    def settings(self) -> dict[str, Any]:
        """The Django settings that point the dashboard at this provider."""
        return {
            "SUPERSTEP_OIDC_ENABLED": True,
            "SUPERSTEP_OIDC_PROVIDER_NAME": "Acme ID",
            "SUPERSTEP_OIDC_ISSUER": self.issuer,
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.base_url}/authorize",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.base_url}/token",
            "OIDC_OP_USER_ENDPOINT": f"{self.base_url}/userinfo",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.base_url}/jwks",
            "OIDC_TIMEOUT": 2,
        }

    def discovery_settings(self) -> dict[str, Any]:
        """The settings that name only the issuer: the endpoints are to be discovered."""
        return {
            **self.settings(),
            "OIDC_OP_AUTHORIZATION_ENDPOINT": "",
            "OIDC_OP_TOKEN_ENDPOINT": "",
            "OIDC_OP_USER_ENDPOINT": "",
            "OIDC_OP_JWKS_ENDPOINT": "",
        }

    def configuration(self) -> dict[str, Any]:
        """The discovery document (the fields the dashboard reads, and a few more)."""
        issuer = (
            self.issuer if self.misbehave != "discovery_other_issuer" else "https://evil.example"
        )
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{self.base_url}/authorize",
            "token_endpoint": f"{self.base_url}/token",
            "userinfo_endpoint": f"{self.base_url}/userinfo",
            "jwks_uri": f"{self.base_url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def id_token(self, claims: dict[str, Any], nonce: str) -> str:
        now = int(time.time())
        body = {
            "iss": self.issuer if self.misbehave != "wrong_issuer" else "https://evil.example",
            "aud": CLIENT_ID if self.misbehave != "wrong_audience" else "another-app",
            "sub": claims["sub"],
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            **{k: v for k, v in claims.items() if k in ("email", "groups")},
        }
        key: Any = self.key
        if self.misbehave == "bad_signature":
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return jwt.encode(body, key, algorithm="RS256", headers={"kid": self.kid})


def _handler(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/authorize":
                self._authorize(query)
            elif url.path == "/.well-known/openid-configuration":
                provider.discovery_requests += 1
                if provider.misbehave == "discovery_500":
                    self._json(500, {"error": "server_error"})
                else:
                    self._json(200, provider.configuration())
            elif url.path == "/jwks":
                self._json(200, provider.jwks())
            elif url.path == "/userinfo":
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                account = provider.access_tokens.get(token)
                if account is None:
                    self._json(401, {"error": "invalid_token"})
                    return
                claims = dict(account)
                if provider.misbehave == "other_sub":
                    claims["sub"] = "someone-else"
                self._json(200, claims)
            else:
                self._json(404, {"error": "not_found"})

        def _authorize(self, query: dict[str, str]) -> None:
            redirect = query["redirect_uri"]
            if provider.misbehave == "deny":
                target = (
                    redirect
                    + "?"
                    + urlencode(
                        {
                            "error": "access_denied",
                            "error_description": "The user said no",
                            "state": query["state"],
                        }
                    )
                )
            else:
                code = secrets.token_urlsafe(16)
                provider.codes[code] = {
                    "account": dict(provider.next_account),
                    "nonce": query.get("nonce", ""),
                    "redirect_uri": redirect,
                    "challenge": query.get("code_challenge", ""),
                    "client_id": query["client_id"],
                }
                target = redirect + "?" + urlencode({"code": code, "state": query["state"]})
            self.send_response(302)
            self.send_header("Location", target)
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if urlparse(self.path).path != "/token":
                self._json(404, {"error": "not_found"})
                return
            provider.token_requests += 1
            if provider.misbehave == "token_500":
                self._json(500, {"error": "server_error"})
                return
            if provider.misbehave == "slow_token":
                time.sleep(4)
            grant = provider.codes.pop(form.get("code", ""), None)  # a code works once
            verifier = form.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if (
                grant is None
                or form.get("client_id") != CLIENT_ID
                or form.get("client_secret") != CLIENT_SECRET
                or form.get("redirect_uri") != grant["redirect_uri"]
                or challenge != grant["challenge"]
            ):
                self._json(400, {"error": "invalid_grant"})
                return
            access = secrets.token_urlsafe(16)
            provider.access_tokens[access] = grant["account"]
            id_token = provider.id_token(grant["account"], grant["nonce"])
            if provider.misbehave == "garbage_token":
                id_token = "not.a.token"
            self._json(
                200,
                {
                    "access_token": access,
                    "token_type": "Bearer",
                    "id_token": id_token,
                    "expires_in": 300,
                },
            )

    return Handler


@contextmanager
def running_provider() -> Iterator[FakeProvider]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    provider = FakeProvider(
        base_url=base_url,
        issuer=base_url,
        key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )
    server.RequestHandlerClass = _handler(provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
