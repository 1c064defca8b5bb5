"""Hot partition key detector: the Lambda consumer of a DynamoDB stream.

Pure logic lives in the modules of this package; the detector's I/O is in ``adapters``, the deploy-time
custom resources' in ``provisioning``; ``handlers`` are the thin Lambda entry points. Nothing here performs
I/O at import time. Its layers: tests/unit/test_import_graph.py (``LAYERS``).
"""
