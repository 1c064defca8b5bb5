"""Names the function and the stack share (no imports: the CDK app reads them without Powertools)."""

SERVICE = "hotkey-detector"
NAMESPACE = "HotKeyDetector"
