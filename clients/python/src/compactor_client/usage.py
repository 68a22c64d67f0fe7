"""A provider's ``usage`` as Compactor's: ``{input, output, reasoning, cacheRead, cacheWrite}``.

``input`` is the prompt tokens neither read from nor written to the prompt cache, so the whole
prompt is ``input + cacheRead + cacheWrite``; ``output`` includes ``reasoning``.

The providers disagree on what "input" means: OpenAI's ``prompt_tokens`` / ``input_tokens`` is the
whole prompt, cached tokens included; Anthropic's ``input_tokens`` already leaves the cache out.
Sending OpenAI's ``prompt_tokens`` as ``input`` and its ``cached_tokens`` as ``cacheRead`` counts
the cached prefix twice, and Compactor then compacts a conversation about half the size it thinks.
These helpers do the subtraction once, for both.

They take the answer's ``usage`` as a dict (the JSON, or an SDK's ``.model_dump()``) or as the SDK
object itself (``completion.usage``, ``message.usage``: fields read as attributes), and never fail
on a partial or odd answer: a missing, ``None``, negative, non-finite or non-numeric count is 0, a
fractional one is rounded, and nothing exceeds what the API accepts.
"""

import math
from collections.abc import Mapping
from typing import Any

from .types import UsageIn

# Typed ``UsageIn`` (what ``MessageIn["usage"]`` takes) although every key is always present.

#: The API's counts are Postgres ``integer``s.
MAX_COUNT = 2_147_483_647


def _field(source: Any, name: str) -> Any:
    """``source[name]`` of a mapping, ``source.name`` of an SDK object; None when absent."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _count(value: Any) -> int:
    """A count the API accepts: garbage is 0, fractions round (half up), at most ``MAX_COUNT``."""
    # bool is an int subclass, and a string is not a count: neither is one a provider sends.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return 0
    if value <= 0:
        return 0
    return min(int(math.floor(value + 0.5)), MAX_COUNT)


def usage_from_openai(usage: Any) -> UsageIn:
    """Compactor's usage from OpenAI's: Chat Completions or the Responses API, told apart by fields.

    ``input = prompt - cached_tokens``, ``cacheRead = cached_tokens``, ``reasoning =
    reasoning_tokens``, ``cacheWrite = 0``: OpenAI caches on its own and charges a write as input,
    so the tokens its newer ``cache_write_tokens`` reports stay in ``input``, as the contract's
    ``Usage`` documents (the overflow trigger leaves cache writes out, and these it must count).
    """
    chat = _field(usage, "prompt_tokens") is not None or _field(usage, "completion_tokens") is not None
    if chat:
        prompt = _count(_field(usage, "prompt_tokens"))
        output = _count(_field(usage, "completion_tokens"))
        prompt_details = _field(usage, "prompt_tokens_details")
        output_details = _field(usage, "completion_tokens_details")
    else:
        prompt = _count(_field(usage, "input_tokens"))
        output = _count(_field(usage, "output_tokens"))
        prompt_details = _field(usage, "input_tokens_details")
        output_details = _field(usage, "output_tokens_details")
    # Cached tokens are part of the prompt: never more of them than the prompt holds.
    cache_read = min(_count(_field(prompt_details, "cached_tokens")), prompt)
    return {
        "input": prompt - cache_read,
        "output": output,
        # The API refuses reasoning above output (it is part of output).
        "reasoning": min(_count(_field(output_details, "reasoning_tokens")), output),
        "cacheRead": cache_read,
        "cacheWrite": 0,
    }


def usage_from_anthropic(usage: Any) -> UsageIn:
    """Compactor's usage from Anthropic's Messages API.

    ``input_tokens`` is already the uncached part, so it maps as it is; ``cache_read_input_tokens``
    is ``cacheRead`` and ``cache_creation_input_tokens`` ``cacheWrite``. Anthropic counts extended
    thinking in ``output_tokens`` without a breakdown, so ``reasoning`` is 0.
    """
    return {
        "input": _count(_field(usage, "input_tokens")),
        "output": _count(_field(usage, "output_tokens")),
        "reasoning": 0,
        "cacheRead": _count(_field(usage, "cache_read_input_tokens")),
        "cacheWrite": _count(_field(usage, "cache_creation_input_tokens")),
    }
