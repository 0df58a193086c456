"""Which model a command runs on: the offline one or an endpoint, and its label."""

from __future__ import annotations

import math
import os

from autogen_core.models import (
    ChatCompletionClient,
)

from handoffs_runtime.errors import ModelConfigError
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.models.openai_compatible import openai_model
from handoffs_runtime.private import model_raw_config


def model_from_options(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> ChatCompletionClient:
    """The model the CLI asked for: ``--model``/``HANDOFFS_MODEL``, else the built-in offline model;
    ``timeout`` is ``--model-timeout`` (seconds per call; the offline model answers at once)."""
    if timeout is not None and not 0 < timeout < math.inf:
        raise ModelConfigError(f"--model-timeout must be a positive number of seconds, got {timeout:g}")
    name = model or os.environ.get("HANDOFFS_MODEL") or "offline"
    if name == "offline":
        return OfflineModel()
    url = base_url or os.environ.get("OPENAI_BASE_URL")
    if timeout is None:
        return openai_model(name, base_url=url, api_key=api_key)
    return openai_model(name, base_url=url, api_key=api_key, timeout=timeout)


def model_label(client: ChatCompletionClient) -> str:
    """A short name of the model for the chat banner."""
    label = getattr(client, "label", None)
    if isinstance(label, str):
        return label
    info = model_raw_config(client)
    name = info.get("model") if isinstance(info, dict) else None
    return str(name or type(client).__name__)
