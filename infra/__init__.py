"""CDK infrastructure for the hot-key detector (constructs import aws_cdk; ``settings`` does not)."""
