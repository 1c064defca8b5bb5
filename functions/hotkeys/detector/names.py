"""Names the function and the stack share (no imports: the CDK app reads them without Powertools)."""

SERVICE = "hotkey-detector"
NAMESPACE = "HotKeyDetector"
# Write units counted per global secondary index: metric "IndexWriteUnits/<table>/<index>".
INDEX_METRIC_PREFIX = "IndexWriteUnits/"
