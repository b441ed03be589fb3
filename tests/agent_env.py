"""Shared set-up of the agent tests: a test key held the way a user's would be, and the settings
that point the real anthropic SDK at a scripted server."""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager

from kernel_bakeoff.tasks.agents.settings import AgentSettings, forget_key, take_key

KEY_PREFIX = "sk-ant-bakeoff-test-"


@contextmanager
def held_key():
    """Set ANTHROPIC_API_KEY as a user would, let the agents take it; forget it afterwards."""
    key = KEY_PREFIX + secrets.token_hex(12)
    os.environ["ANTHROPIC_API_KEY"] = key
    try:
        assert take_key() == key and "ANTHROPIC_API_KEY" not in os.environ
        yield key
    finally:
        os.environ.pop("ANTHROPIC_API_KEY", None)
        forget_key()


def settings_for(api, **overrides) -> AgentSettings:
    values = dict(base_url=api.base_url, retry_base_s=0.05, api_timeout_s=30, api_retries=2)
    return AgentSettings(**(values | overrides))


AGENT_ENV = {  # the same settings for code that reads them from the environment (the flows)
    "BAKEOFF_AGENT_RETRY_BASE_S": "0.05",
    "BAKEOFF_AGENT_API_TIMEOUT_S": "60",
    "BAKEOFF_REVIEW_MAX_SPREAD": "5",  # this shared CPU box times interpreted Triton 40-70% apart
}
