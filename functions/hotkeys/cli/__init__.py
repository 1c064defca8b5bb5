"""``hotkeys``: read the detector's stats, replay events locally, generate workloads, check a deployment."""
