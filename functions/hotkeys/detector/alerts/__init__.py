"""Alert rules, verdicts and messages (pure); a shard's first alarm and the judge, which run incidents
through the ports."""
