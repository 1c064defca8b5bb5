"""Settings from the environment, read and validated at every invocation.

Every error names the variable, so a misconfigured deployment says what to fix
in its first log line instead of failing somewhere deep in the pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MAX_TUMBLING_WINDOW_SECONDS = 900


class ConfigError(ValueError):
    """An environment variable is missing or invalid."""


@dataclass(frozen=True)
class Settings:
    stats_table_name: str
    window_seconds: int = 60
    partition_wcu_limit: int = 1000
    alert_threshold: float = 0.8
    alert_hysteresis: float = 0.2
    alert_min_span_seconds: int = 10
    alert_reminder_seconds: int = 900
    share_threshold: float = 0.10
    share_min_wcu: int = 6000
    alert_topic_arn: str | None = None
    partition_key_attribute: str | None = None
    summary_capacity: int = 200
    flush_seconds: int = 10
    stats_retention_days: int = 14
    archive_bucket_name: str | None = None
    archive_prefix: str = "ttl-archive/"
    archive_replicated_ttl: bool = False
    ttl_attribute: str | None = None
    key_display: str = "raw"
    key_hash_salt: str = ""

    @property
    def alert_wcu_per_second(self) -> float:
        return self.alert_threshold * self.partition_wcu_limit


def _text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = _text(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _fraction(env: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = _text(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = (_text(env, name) or "false").lower()
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"{name} must be true or false, got {raw!r}")
    return raw in ("true", "1", "yes")


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = (_text(env, name) or default).lower()
    if raw not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def load_settings(env: Mapping[str, str]) -> Settings:
    stats_table_name = _text(env, "STATS_TABLE_NAME")
    if stats_table_name is None:
        raise ConfigError("STATS_TABLE_NAME is required: the name of the detector's stats table")
    window_seconds = _int(env, "WINDOW_SECONDS", 60, 1, MAX_TUMBLING_WINDOW_SECONDS)
    threshold = _fraction(env, "ALERT_THRESHOLD", 0.8, 0.01, 1.0)
    hysteresis = _fraction(env, "ALERT_HYSTERESIS", 0.2, 0.0, 1.0)
    if hysteresis >= threshold:
        raise ConfigError(f"ALERT_HYSTERESIS ({hysteresis}) must be smaller than ALERT_THRESHOLD ({threshold})")
    key_display = _choice(env, "KEY_DISPLAY", "raw", ("raw", "hash"))
    salt = _text(env, "KEY_HASH_SALT") or ""
    if key_display == "hash" and not salt:
        raise ConfigError("KEY_HASH_SALT is required when KEY_DISPLAY=hash (an unsalted hash of a key is guessable)")
    prefix = _text(env, "ARCHIVE_PREFIX") or "ttl-archive/"
    return Settings(
        stats_table_name=stats_table_name,
        window_seconds=window_seconds,
        partition_wcu_limit=_int(env, "PARTITION_WCU_LIMIT", 1000, 1, 1_000_000),
        alert_threshold=threshold,
        alert_hysteresis=hysteresis,
        alert_min_span_seconds=_int(env, "ALERT_MIN_SPAN_SECONDS", min(10, window_seconds), 1, window_seconds),
        alert_reminder_seconds=_int(env, "ALERT_REMINDER_SECONDS", 900, 60, 86_400),
        share_threshold=_fraction(env, "SHARE_THRESHOLD", 0.10, 0.001, 1.0),
        share_min_wcu=_int(env, "SHARE_MIN_WCU", 6000, 0, 10**12),
        alert_topic_arn=_text(env, "ALERT_TOPIC_ARN"),
        partition_key_attribute=_text(env, "PARTITION_KEY_ATTRIBUTE"),
        summary_capacity=_int(env, "SUMMARY_CAPACITY", 200, 10, 2000),
        flush_seconds=_int(env, "FLUSH_SECONDS", min(10, window_seconds), 1, window_seconds),
        stats_retention_days=_int(env, "STATS_RETENTION_DAYS", 14, 1, 3650),
        archive_bucket_name=_text(env, "ARCHIVE_BUCKET_NAME"),
        archive_prefix=prefix if prefix.endswith("/") else prefix + "/",
        archive_replicated_ttl=_flag(env, "ARCHIVE_REPLICATED_TTL"),
        ttl_attribute=_text(env, "TTL_ATTRIBUTE"),
        key_display=key_display,
        key_hash_salt=salt,
    )
