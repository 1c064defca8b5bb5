"""The package's one Powertools setup: structured logs, EMF metrics and X-Ray traces.

Metric dimensions stay fixed (service only): partition keys are unbounded and
personal-data-prone, so they appear in logs and alerts, never as dimensions. The namespace is the
stack's (``names.metrics_namespace``), which the stack sets in Powertools' ``POWERTOOLS_METRICS_NAMESPACE``
(``names.NAMESPACE_VARIABLE``); where it is not set (the local CLI, tests), the default stack's.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

from hotkeys.detector.names import NAMESPACE, SERVICE

logger = Logger(service=SERVICE)
# No namespace given: Powertools reads its variable (an explicit one would win over it); none set, the default's.
metrics = Metrics(service=SERVICE)
metrics.namespace = metrics.namespace or NAMESPACE
tracer = Tracer(service=SERVICE)
