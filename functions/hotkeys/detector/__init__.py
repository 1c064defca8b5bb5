"""Hot partition key detector: the Lambda consumer of a DynamoDB stream.

Pure logic lives in the modules of this package; all I/O is in ``adapters``;
``app`` is the thin Lambda handler. Nothing here performs I/O at import time.
"""
