"""The package's one Powertools setup: structured logs, EMF metrics and X-Ray traces.

Metric dimensions stay fixed (service only): partition keys are unbounded and
personal-data-prone, so they appear in logs and alerts, never as dimensions.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

from hotkeys.detector.names import NAMESPACE, SERVICE

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)
