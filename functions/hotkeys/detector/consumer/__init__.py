"""The stream consumer's logic: one invocation's records folded into each window's segment, the state
carried between invocations, the snapshots stored and the TTL archive's lines; I/O through ``ports``."""
