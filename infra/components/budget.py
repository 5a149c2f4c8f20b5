"""A billing budget on the project: actual and forecast thresholds, every update published to Pub/Sub."""

from __future__ import annotations

import math

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children
from infra.config import BudgetConfig

# The Budget API refuses longer display names ("must be less than or equal to 60 characters",
# https://cloud.google.com/billing/docs/reference/budget/rest/v1/billingAccounts.budgets).
DISPLAY_NAME_MAX = 60

# budgetCredits -> the Budget API's credit treatment
# (https://cloud.google.com/billing/docs/reference/budget/rest/v1/billingAccounts.budgets#credittypestreatment):
# EXCLUDE_ALL_CREDITS compares spend before credits with the thresholds, so a budget on an account paid by
# promotional or trial credits fires (and the kill switch with it); INCLUDE_ALL_CREDITS nets credits out.
CREDIT_TYPES_TREATMENT = {"exclude": "EXCLUDE_ALL_CREDITS", "include": "INCLUDE_ALL_CREDITS"}

# Cloud Billing publishes budget notifications as this Google-managed account.
BILLING_PUBLISHER = "serviceAccount:billing-budget-alert@system.gserviceaccount.com"


def money(amount: float, currency: str) -> gcp.billing.BudgetAmountSpecifiedAmountArgsDict:
    """google.type.Money: whole units as a string, the fraction in nanos."""
    nanos, units = math.modf(amount)
    return {"currency_code": currency, "units": str(int(units)), "nanos": round(nanos * 1e9)}


def display_name(stack: str, project: str) -> str:
    """At most 3 + 15 (stack) + 1 + 30 (project id) = 49 characters."""
    return f"vt {stack} {project}"


def threshold_rules(cfg: BudgetConfig) -> list[gcp.billing.BudgetThresholdRuleArgsDict]:
    bases = [(t, "CURRENT_SPEND") for t in cfg.thresholds] + [
        (t, "FORECASTED_SPEND") for t in cfg.forecast_thresholds
    ]
    return [{"threshold_percent": t, "spend_basis": basis} for t, basis in bases]


class Budget(pulumi.ComponentResource):
    """`topic` is what the kill switch subscribes to."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        stack: str,
        cfg: BudgetConfig,
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:Budget", name, None, opts)
        child = children(self, opts)
        self.topic = gcp.pubsub.Topic(
            "budget-topic", project=project, name=f"vt-{stack}-budget", labels=labels, opts=child
        )
        publisher = gcp.pubsub.TopicIAMMember(
            "budget-topic-publisher",
            project=project,
            topic=self.topic.name,
            role="roles/pubsub.publisher",
            member=BILLING_PUBLISHER,
            opts=child,
        )
        self.channels = [
            gcp.monitoring.NotificationChannel(
                f"budget-email-{index}",
                project=project,
                type="email",
                display_name=f"vertex-training {stack} budget: {email}",
                labels={"email_address": email},
                user_labels=labels,
                opts=child,
            )
            for index, email in enumerate(cfg.emails)
        ]
        project_number = gcp.organizations.get_project_output(project_id=project).number
        # The Budgets API needs a quota project even with user credentials: bill the call to this project.
        provider = gcp.Provider(
            "billing", project=project, user_project_override=True, billing_project=project, opts=child
        )
        self.budget = gcp.billing.Budget(
            "budget",
            billing_account=cfg.billing_account,
            display_name=display_name(stack, project),
            budget_filter={
                "projects": [project_number.apply(lambda n: f"projects/{n}")],
                "credit_types_treatment": CREDIT_TYPES_TREATMENT[cfg.credits],
            },
            amount={"specified_amount": money(cfg.amount, cfg.currency)},
            threshold_rules=threshold_rules(cfg),
            all_updates_rule={
                "pubsub_topic": self.topic.id,
                "schema_version": "1.0",
                "monitoring_notification_channels": [c.id for c in self.channels],
                "disable_default_iam_recipients": False,
            },
            opts=children(self, opts, provider=provider, depends_on=[publisher]),
        )
        self.topic_id = self.topic.id
        self.register_outputs({"topic": self.topic_id, "budget": self.budget.name})
