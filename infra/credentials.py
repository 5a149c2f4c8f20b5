"""Whether this machine has Google credentials the commands can use, said in one line with the login command
(`runs`, `preflight` and `leftovers` say it alike)."""

from __future__ import annotations

import logging
import os

from infra.dynamic.endpoints import EMULATOR_ENV

LOGIN = "gcloud auth application-default login"
SIGN_IN = f"sign in with `{LOGIN}`"


def credentials_problem(emulator_env: str = EMULATOR_ENV) -> str | None:
    """Why Google APIs cannot be called (no usable Application Default Credentials), None when they can (or
    when `emulator_env` points the clients at an emulator)."""
    if os.environ.get(emulator_env):
        return None
    import google.auth
    from google.auth import exceptions as auth_exceptions

    # google.auth logs a warning when the credentials name no project; the command names it.
    logger = logging.getLogger("google.auth._default")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        google.auth.default()
    except auth_exceptions.DefaultCredentialsError as exc:
        # google-auth says "not found" for none at all, else what is wrong with the file it was pointed to.
        if "not found" in str(exc) and "GOOGLE_APPLICATION_CREDENTIALS" not in os.environ:
            return f"no Google credentials on this machine; {SIGN_IN}"
        return f"Google credentials unusable ({str(exc).splitlines()[0]}); {SIGN_IN}"
    except auth_exceptions.GoogleAuthError as exc:
        return f"Google credentials unusable ({str(exc).splitlines()[0]}); {SIGN_IN}"
    finally:
        logger.setLevel(level)
    return None
