"""The function imports on the SDK the Lambda runtime happens to ship, old or new."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from botocore.config import Config

from hotkeys.detector.adapters.aws import sdk_config


def test_an_older_botocore_without_account_id_endpoints_still_gets_a_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a botocore that predates account-id endpoints (its Config rejects the option, as before 1.37)
    older = OrderedDict((k, v) for k, v in Config.OPTION_DEFAULTS.items() if k != "account_id_endpoint_mode")
    monkeypatch.setattr(Config, "OPTION_DEFAULTS", older)
    with pytest.raises(TypeError):
        Config(account_id_endpoint_mode="disabled")
    # When the detector builds its SDK settings, then it works, with the same retries and timeouts
    config = sdk_config()
    assert config.retries == {"max_attempts": 3, "mode": "standard"}
    assert (config.connect_timeout, config.read_timeout) == (2, 5)


def test_a_current_botocore_gets_account_id_endpoints_disabled() -> None:
    assert sdk_config().account_id_endpoint_mode == "disabled"
