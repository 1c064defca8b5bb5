"""The domain: a stream record's change, its size and write units by DynamoDB's rules, its index
writes, the per-key summary, windows and items. Plain functions and types, no I/O."""
