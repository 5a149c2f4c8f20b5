"""A fake of Google's OAuth 2.0 token endpoint, for the grants Application Default Credentials make.

Plain HTTP on localhost, reached by the real google-auth refresh: a service-account key file names its
`token_uri`; an `authorized_user` file (what `gcloud auth application-default login` writes) always uses
google-auth's own endpoint constant, which a test points here. It answers as Google documents it (read
2026-11-25): refreshing a user's access token ("Using OAuth 2.0 for Web Server Applications",
https://developers.google.com/identity/protocols/oauth2/web-server#offline): a form POST with
grant_type=refresh_token, client_id, client_secret and refresh_token gives JSON `access_token`, `expires_in`,
`scope`, `token_type` "Bearer" and, for an `openid` grant, an `id_token`; a revoked or expired refresh token
gives HTTP 400 `{"error": "invalid_grant"}`. A service account ("Using OAuth 2.0 for Server to Server
Applications", https://developers.google.com/identity/protocols/oauth2/service-account#httprest): grant_type
urn:ietf:params:oauth:grant-type:jwt-bearer with a signed `assertion` gives `access_token`, `expires_in`,
`token_type`. Nothing here checks signatures, and the ID token is unsigned.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

VALID_REFRESH_TOKEN = "fake-refresh-token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def id_token(email: str) -> str:
    header = {"alg": "RS256", "typ": "JWT"}
    claims = {"iss": "https://accounts.google.com", "email": email, "email_verified": True}
    return f"{_b64(header)}.{_b64(claims)}.unsigned"


class FakeTokenEndpoint:
    """Refreshes `VALID_REFRESH_TOKEN` for the user `email`; any other refresh token is invalid_grant."""

    def __init__(self, email: str = "dev@example.com") -> None:
        self.email = email
        self.requests: list[dict[str, list[str]]] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
                endpoint.requests.append(form)
                grant = form.get("grant_type", [""])[0]
                user = grant == "refresh_token" and form.get("refresh_token") == [VALID_REFRESH_TOKEN]
                valid = user or (grant == JWT_BEARER and bool(form.get("assertion")))
                body: dict[str, object] = (
                    {"access_token": "fake-access-token", "expires_in": 3599, "token_type": "Bearer"}
                    if valid
                    else {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
                )
                if user:
                    body["scope"] = (
                        "openid https://www.googleapis.com/auth/userinfo.email "
                        "https://www.googleapis.com/auth/cloud-platform"
                    )
                    body["id_token"] = id_token(endpoint.email)
                payload = json.dumps(body).encode()
                self.send_response(200 if valid else 400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_port}/token"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def write_adc(self, path: Path, refresh_token: str = VALID_REFRESH_TOKEN) -> Path:
        """An `authorized_user` ADC file as gcloud writes it (refreshed at google-auth's own token URI)."""
        path.write_text(
            json.dumps(
                {
                    "client_id": "fake-client.apps.googleusercontent.com",
                    "client_secret": "fake-secret",
                    "refresh_token": refresh_token,
                    "type": "authorized_user",
                }
            )
        )
        return path


def write_service_account_key(path: Path, token_uri: str, email: str) -> Path:
    """A service-account key file (a throwaway RSA key made here) whose token_uri is `token_uri`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": email.split("@")[1].split(".")[0],
                "private_key": pem,
                "client_email": email,
                "client_id": "1",
                "token_uri": token_uri,
            }
        )
    )
    return path
