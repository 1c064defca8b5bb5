"""Turns on NEW_AND_OLD_IMAGES streams on a table the stack does not own, and reads the stream ARN.

"Stream already enabled" is not an error (the existing stream is used, whatever its view
type: it cannot be changed in place). Deleting the stack never disables the stream:
other consumers may depend on it.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.nag import acknowledge


class StreamEnabler(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table_name: str) -> None:
        super().__init__(scope, construct_id)
        table_arn = Stack.of(self).format_arn(service="dynamodb", resource="table", resource_name=table_name)
        policy = cr.AwsCustomResourcePolicy.from_sdk_calls(resources=[table_arn])
        enable = cr.AwsCustomResource(
            self,
            "Enable",
            on_create=cr.AwsSdkCall(
                service="DynamoDB",
                action="updateTable",
                parameters={
                    "TableName": table_name,
                    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
                },
                physical_resource_id=cr.PhysicalResourceId.of(f"stream-{table_name}"),
                # DynamoDB answers ValidationException when a stream is already enabled.
                ignore_error_codes_matching="ValidationException",
            ),
            policy=policy,
            install_latest_aws_sdk=False,
        )
        describe = cr.AwsCustomResource(
            self,
            "Describe",
            on_update=cr.AwsSdkCall(
                service="DynamoDB",
                action="describeTable",
                parameters={"TableName": table_name},
                physical_resource_id=cr.PhysicalResourceId.of(f"describe-{table_name}"),
                output_paths=["Table.LatestStreamArn"],
            ),
            policy=policy,
            install_latest_aws_sdk=False,
        )
        describe.node.add_dependency(enable)
        self.stream_arn = describe.get_response_field("Table.LatestStreamArn")
        self.table_arn = table_arn
        _acknowledge_provider(Stack.of(self))


def _acknowledge_provider(stack: Stack) -> None:
    """AwsCustomResource's provider is one function per stack, created by CDK itself."""
    provider = stack.node.try_find_child("AWS" + cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace("-", ""))
    if provider is None:
        return
    reason = "CDK's AwsCustomResource provider: runs two DynamoDB calls at deploy time, nothing at run time."
    for finding in (
        "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "Serverless::Serverless-LambdaDefaultMemorySize",
        "Serverless::Serverless-LambdaDLQ",
        "Serverless::Serverless-LambdaTracing",
    ):
        acknowledge(provider, finding, reason)
