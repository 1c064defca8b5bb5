"""The Lambda entry points: each reads its settings through ``config``, builds its adapters and hands
the event to the logic."""
