"""Optional Slack delivery through AWS Chatbot, with a read-only guardrail."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct


class SlackChannel(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, workspace_id: str, channel_id: str, topic: sns.ITopic
    ) -> None:
        super().__init__(scope, construct_id)
        read_only = iam.ManagedPolicy.from_aws_managed_policy_name("ReadOnlyAccess")
        self.channel = chatbot.SlackChannelConfiguration(
            self,
            "Channel",
            # Unique per account: the stack's name keeps two stacks posting to one channel apart.
            slack_channel_configuration_name=f"{Stack.of(self).stack_name}-{channel_id}"[:128],
            slack_workspace_id=workspace_id,
            slack_channel_id=channel_id,
            notification_topics=[topic],
            # Chatbot's default guardrail is AdministratorAccess: never let a chat channel act as admin.
            guardrail_policies=[read_only],
            logging_level=chatbot.LoggingLevel.ERROR,
        )
