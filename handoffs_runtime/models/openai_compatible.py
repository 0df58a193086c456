"""Any OpenAI-compatible endpoint as an autogen model client."""

from __future__ import annotations

import math
import os
from typing import Any

from autogen_core.models import (
    ChatCompletionClient,
    ModelInfo,
)

from handoffs_runtime.errors import ModelConfigError
from handoffs_runtime.models.capabilities import TOOL_CALL_CONTENTS, ToolCallContent, capabilities_of
from handoffs_runtime.models.compat import endpoint_transport
from handoffs_runtime.models.local import tool_calling_info
from handoffs_runtime.models.redaction import add_secret

# --- OpenAI-compatible endpoints ---------------------------------------------------------------------


def openai_model(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    parallel_tool_calls: bool | None = False,
    timeout: float = 30.0,
    max_retries: int = 2,
    model_info: ModelInfo | None = None,
    tool_call_content: ToolCallContent = "auto",
) -> ChatCompletionClient:
    """A client for any OpenAI-compatible endpoint (OpenAI, Azure's v1 API, Ollama, vLLM, llama.cpp).

    Models that autogen does not know by name get a generic ``model_info`` (function calling on, one system
    message). ``parallel_tool_calls=None`` leaves the setting out for servers that reject it.
    ``timeout`` is the total deadline of one call in seconds: connecting, the whole answer (streamed or
    not) and the client's ``max_retries`` retries; a slow or trickling endpoint ends the call there.

    What real servers get wrong is handled per endpoint (see :mod:`~handoffs_runtime.models.compat`):
    ``tool_call_content`` says how an assistant message with tool calls and no text is sent (``"auto"``:
    ``""`` until the server refuses it, then ``null``), streamed calls ask for usage, answers are read by
    the project, and a streamed call that fails before its first word is asked again without streaming.
    What is learnt of an endpoint is kept for the process and shared by all its clients (see
    :mod:`~handoffs_runtime.models.capabilities`); ``"auto"`` keeps what was learnt or set, another
    value sets it for the endpoint.
    """
    import openai

    from handoffs_runtime.models.deadline import DeadlineOpenAIClient

    if not model:
        raise ModelConfigError("no model name: pass --model NAME or set HANDOFFS_MODEL")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if base_url is None:
            raise ModelConfigError(
                f"model {model!r} needs an API key: set OPENAI_API_KEY, or give --base-url for a local "
                "server that needs none"
            )
        key = "not-needed"  # local servers (Ollama, llama.cpp) accept any key
    else:
        add_secret(key)  # an endpoint may echo it in an error, which may be logged
    if not (isinstance(timeout, int | float) and 0 < timeout < math.inf):
        raise ModelConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if tool_call_content not in TOOL_CALL_CONTENTS:
        raise ModelConfigError(
            f"tool_call_content must be 'auto', 'null' or 'empty', got {tool_call_content!r}"
        )
    capabilities = capabilities_of(base_url)
    if tool_call_content != "auto":
        capabilities.tool_call_content = tool_call_content
    transport = endpoint_transport(base_url, capabilities)
    kwargs: dict[str, Any] = {
        "model": model,
        "api_key": key,
        "timeout": timeout,
        "max_retries": max_retries,
        "http_client": openai.DefaultAsyncHttpxClient(transport=transport),
        "endpoint": capabilities,
    }
    if base_url:
        kwargs["base_url"] = base_url
    if parallel_tool_calls is not None:
        kwargs["parallel_tool_calls"] = parallel_tool_calls
    if model_info is not None:
        kwargs["model_info"] = model_info
    try:
        return DeadlineOpenAIClient(deadline=timeout, **kwargs)
    except ValueError:
        if model_info is not None:
            raise
        kwargs["model_info"] = tool_calling_info(json_output=True, multiple_system_messages=False)
        return DeadlineOpenAIClient(deadline=timeout, **kwargs)
