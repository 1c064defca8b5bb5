"""The detector's only I/O: small adapters over boto3, injected into the pipeline."""
