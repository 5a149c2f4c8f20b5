"""Who is calling: Application Default Credentials that can get a token, and the IAM member they act as."""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, replace
from typing import Any

import google.auth
from google.auth import exceptions as auth_exceptions
from google.auth.transport.requests import Request

from infra.preflight.results import Result, cannot_tell, missing, ok

ADC_LOGIN = "gcloud auth application-default login"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
ANYONE = "user:<you@example.com>"


@dataclass(frozen=True)
class Caller:
    """Who the credentials are: an IAM member (None when the credentials do not say) and a description."""

    member: str | None
    description: str
    quota_project: str | None = None  # the project the credentials bill client-based API calls to

    @property
    def member_or_placeholder(self) -> str:
        return self.member or ANYONE


def _email_in(id_token: str | None) -> str | None:
    """The `email` claim of an OpenID Connect ID token (shown, not trusted: the APIs check the token)."""
    if not id_token or id_token.count(".") != 2:
        return None
    payload = id_token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return None
    return claims.get("email") if isinstance(claims, dict) else None


def identify(credentials: Any) -> Caller:
    """The member the credentials act as: a user's e-mail (ID token or ADC file), else a service account."""
    email = _email_in(getattr(credentials, "id_token", None)) or getattr(credentials, "account", "")
    if email:
        return Caller(f"user:{email}", f"user {email}")
    account = getattr(credentials, "service_account_email", None)
    if account and account != "default":
        return Caller(f"serviceAccount:{account}", f"service account {account}")
    return Caller(None, f"{type(credentials).__module__}.{type(credentials).__name__} (identity not shown)")


def credentials(project: str) -> tuple[Result, Caller | None]:
    """Application Default Credentials that can get a token, and who they are."""
    item = "credentials"
    # google.auth logs a warning when the credentials name no project; the stack names it, so keep it quiet.
    logger = logging.getLogger("google.auth._default")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        found, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
    except auth_exceptions.DefaultCredentialsError:
        return missing(item, "no Application Default Credentials found", ADC_LOGIN), None
    finally:
        logger.setLevel(level)
    try:
        found.refresh(Request())
    except auth_exceptions.RefreshError as exc:
        return missing(item, f"Application Default Credentials cannot get a token ({exc})", ADC_LOGIN), None
    except auth_exceptions.TransportError as exc:
        return cannot_tell(item, f"could not reach Google's token endpoint ({exc})"), None
    quota = getattr(found, "quota_project_id", None)
    caller = replace(identify(found), quota_project=quota)
    note = (
        f"quota project {quota}"
        if quota
        else f"no quota project (`gcloud auth application-default set-quota-project {project}` sets one)"
    )
    return ok(item, f"Application Default Credentials of {caller.description}; {note}"), caller
