"""The notification automation for regressions: one command, against the Prefect server.

    python -m deployments.alerts --webhook-url https://hooks.example.com/T0/B0/xyz

saves a webhook notification block (`bakeoff-regression`) that posts {"text": ...} to the URL
(Slack's and Mattermost's incoming webhooks take that as it is) and creates the automation
`bakeoff-nightly-regression`: whenever a run of the `regression` flow (the regression/nightly
deployment, or a run by hand) enters Failed, which it does when any kernel regressed, the
block is sent the flow run's name, its message and a link to it. Both are replaced when the
command runs again.
"""

from __future__ import annotations

import argparse
import sys

AUTOMATION = "bakeoff-nightly-regression"
BLOCK = "bakeoff-regression"
SUBJECT = "kernel-bakeoff: {{ flow_run.name }} failed"
BODY = (
    "{{ flow_run.state.message }}\n"
    "Flow run: {{ flow_run|ui_url }}\n"
    "The summary artifact of the run lists each kernel's trend."
)


def create(webhook_url: str, flow_name: str = "regression"):
    from prefect.automations import Automation
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import EventTrigger, Posture

    block = CustomWebhookNotificationBlock(
        name="kernel-bakeoff",
        url=webhook_url,
        json_data={"text": "{{subject}}\n{{body}}"},
        allow_private_urls=True,
    )
    block_id = block.save(BLOCK, overwrite=True)
    _delete_earlier()
    return Automation(
        name=AUTOMATION,
        description="Notify when the nightly regression flow run ends Failed (a regression).",
        trigger=EventTrigger(
            expect={"prefect.flow-run.Failed"},
            match_related={"prefect.resource.role": "flow", "prefect.resource.name": flow_name},
            posture=Posture.Reactive,
            threshold=1,
        ),
        actions=[SendNotification(block_document_id=block_id, subject=SUBJECT, body=BODY)],
    ).create()


def _delete_earlier() -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for old in client.read_automations_by_name(AUTOMATION):
            client.delete_automation(old.id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deployments.alerts", description=__doc__)
    parser.add_argument("--webhook-url", required=True, help="incoming webhook to post to")
    parser.add_argument("--flow", default="regression", help="flow whose failures notify")
    args = parser.parse_args(argv)
    made = create(args.webhook_url, args.flow)
    print(
        f"automation {made.name} ({made.id}): a Failed {args.flow} flow run notifies block {BLOCK}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
