"""DynamoDB hot-key detector: the one import root of the ``dynamodb-hotkeys`` distribution.

``hotkeys.detector`` is the Lambda code (deployed alone, as a self-contained asset);
``hotkeys.cli.main`` is the ``hotkeys`` command line, which runs that same code locally.
"""
