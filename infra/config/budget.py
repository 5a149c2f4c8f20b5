"""Budget keys: the billing budget, its alert thresholds and e-mail channels."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra import gcp_ids
from infra.config.reader import ConfigError, Reader, path_number, positive, set_fix

_CURRENCY = re.compile(r"^[A-Z]{3}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# A budget can notify at most five monitoring channels.
MAX_BUDGET_EMAILS = 5
KEYS = (
    "billingAccount",
    "budgetAmount",
    "budgetCurrency",
    "budgetThresholds",
    "budgetForecastThresholds",
    "budgetEmails",
    "budgetCredits",
)
# exclude: thresholds see spend before credits, so a budget on a credit-funded account still fires;
# include: spend net of credits (promotional or free-trial credits can keep it from ever firing).
CREDIT_TREATMENTS = ("exclude", "include")


@dataclass(frozen=True)
class BudgetConfig:
    billing_account: str
    amount: float
    currency: str
    thresholds: tuple[float, ...]
    forecast_thresholds: tuple[float, ...]
    emails: tuple[str, ...]
    credits: str = "exclude"


def _thresholds(read: Reader, key: str, default: tuple[float, ...]) -> tuple[float, ...]:
    values = read.list(key, default, (0.5, 0.9, 1.0))
    fix = f"use fractions of the budget, e.g. [0.5, 0.9, 1.0] (1.0 = 100%) in Pulumi.<stack>.yaml under {key}"
    result = []
    for value in map(path_number, values):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 10:
            raise ConfigError(key, f"{value!r} is not a fraction between 0 and 10", fix)
        result.append(float(value))
    if len(set(result)) != len(result):
        raise ConfigError(key, f"duplicate thresholds in {list(values)}", fix)
    return tuple(sorted(result))


def read_budget(read: Reader, required: bool) -> BudgetConfig | None:
    account = read.str("billingAccount", None, "<ACCOUNT_ID>")
    if account is None:
        if required:
            raise ConfigError(
                "billingAccount",
                "is required for a cloud stack (the budget is created on it)",
                set_fix("billingAccount", "<ACCOUNT_ID>")
                + " (the ACCOUNT_ID column of `gcloud billing accounts list`)",
            )
        return None
    if not gcp_ids.BILLING_ACCOUNT.match(account):
        raise ConfigError(
            "billingAccount",
            f"{account!r} is not a billing account id like 012345-6789AB-CDEF01",
            "copy the ACCOUNT_ID column of `gcloud billing accounts list`",
        )
    amount = read.number("budgetAmount", 20.0, float, "50")
    positive("budgetAmount", amount, "50")
    currency = read.str("budgetCurrency", "USD", "USD")
    if not _CURRENCY.match(currency):
        raise ConfigError(
            "budgetCurrency",
            f"{currency!r} is not an ISO 4217 code",
            set_fix("budgetCurrency", "USD") + " (it must be the billing account's currency)",
        )
    emails = read.list("budgetEmails", (), ("you@example.com",))
    for email in emails:
        if not isinstance(email, str) or not _EMAIL.match(email):
            raise ConfigError("budgetEmails", f"{email!r} is not an e-mail address", "list addresses only")
    if len(emails) > MAX_BUDGET_EMAILS:
        raise ConfigError(
            "budgetEmails",
            f"a budget notifies at most {MAX_BUDGET_EMAILS} channels, got {len(emails)}",
            "use a group address",
        )
    return BudgetConfig(
        billing_account=account,
        amount=amount,
        currency=currency,
        thresholds=_thresholds(read, "budgetThresholds", (0.5, 0.9, 1.0)),
        forecast_thresholds=_thresholds(read, "budgetForecastThresholds", (1.0,)),
        emails=tuple(emails),
        credits=read.str("budgetCredits", "exclude", "exclude", CREDIT_TREATMENTS) or "exclude",
    )
