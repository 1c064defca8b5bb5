"""Names the function and the stack share (no imports: the CDK app reads them without Powertools)."""

SERVICE = "hotkey-detector"
NAMESPACE = "HotKeyDetector"
# Write units counted per global secondary index: metric "IndexWriteUnits/<table>/<index>".
INDEX_METRIC_PREFIX = "IndexWriteUnits/"

# The partition keys of the archive spool's items in the stats table (adapters/archive_spool.py): the
# function may delete those items only.
SPOOL_PREFIX = "SPOOL#"
