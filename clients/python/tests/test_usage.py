"""``usage_from_openai`` / ``usage_from_anthropic`` on real-looking provider answers (dicts, and SDK-like
objects read by attribute), a cached one among them to show nothing is counted twice, and garbage."""

import unittest
from types import SimpleNamespace
from typing import Any, List, Tuple

import support  # noqa: F401  (puts src/ on the path)

from compactor_client import usage_from_anthropic, usage_from_openai
from compactor_client.types import Usage


def usage(input: int, output: int, reasoning: int = 0, cache_read: int = 0, cache_write: int = 0) -> Usage:
    return {
        "input": input,
        "output": output,
        "reasoning": reasoning,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
    }


def as_object(value: Any) -> Any:
    """A dict as the SDKs' pydantic models read: every key an attribute, nested ones too."""
    if isinstance(value, dict):
        return SimpleNamespace(**{key: as_object(item) for key, item in value.items()})
    return value


OPENAI_CASES: List[Tuple[str, Any, Usage]] = [
    (
        "a Chat Completions answer without cache",
        {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163},
        usage(1117, 46),
    ),
    (
        # The double count of issue 36: 14,608 would be 7,304 + 7,304 sent as input and cacheRead.
        "a Chat Completions answer that read 7,168 of its 7,304 prompt tokens from the cache",
        {
            "prompt_tokens": 7304,
            "completion_tokens": 212,
            "total_tokens": 7516,
            "prompt_tokens_details": {"cached_tokens": 7168, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 128,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        usage(136, 212, 128, 7168),
    ),
    (
        # OpenAI charges cache writes as input: they stay in input, counted once (cacheWrite 0).
        "a Chat Completions answer that also reports cache writes",
        {
            "prompt_tokens": 3000,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 1500},
        },
        usage(1976, 10, 0, 1024),
    ),
    (
        "a Responses API answer with cache and reasoning",
        {
            "input_tokens": 9845,
            "input_tokens_details": {"cached_tokens": 9600, "cache_write_tokens": 0},
            "output_tokens": 1330,
            "output_tokens_details": {"reasoning_tokens": 1024},
            "total_tokens": 11175,
        },
        usage(245, 1330, 1024, 9600),
    ),
    (
        "a proxy with null details",
        {
            "prompt_tokens": 500,
            "completion_tokens": 20,
            "prompt_tokens_details": None,
            "completion_tokens_details": None,
        },
        usage(500, 20),
    ),
    (
        "garbage: negative, fractional, NaN and a string",
        {
            "prompt_tokens": 1000.6,
            "completion_tokens": -3,
            "prompt_tokens_details": {"cached_tokens": float("nan")},
            "completion_tokens_details": {"reasoning_tokens": "12"},
        },
        usage(1001, 0),
    ),
    (
        "more cached tokens than the prompt holds, more reasoning than output",
        {
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 250},
            "completion_tokens_details": {"reasoning_tokens": 9},
        },
        usage(0, 5, 5, 100),
    ),
    ("no usage", None, usage(0, 0)),
    (
        "a count beyond what Postgres holds",
        {"prompt_tokens": 10**12, "completion_tokens": 1},
        usage(2147483647, 1),
    ),
]

ANTHROPIC_CASES: List[Tuple[str, Any, Usage]] = [
    (
        "a Messages answer without cache",
        {
            "input_tokens": 2095,
            "output_tokens": 503,
            "cache_creation_input_tokens": None,
            "cache_read_input_tokens": None,
        },
        usage(2095, 503),
    ),
    (
        # input_tokens already leaves the cache out: nothing is subtracted.
        "a Messages answer that read 6,400 tokens from the cache",
        {
            "input_tokens": 112,
            "output_tokens": 318,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 6400,
            "service_tier": "standard",
        },
        usage(112, 318, 0, 6400),
    ),
    (
        "a Messages answer that wrote a cache breakpoint",
        {
            "input_tokens": 21,
            "output_tokens": 1024,
            "cache_creation_input_tokens": 5910,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 5910, "ephemeral_1h_input_tokens": 0},
        },
        usage(21, 1024, 0, 0, 5910),
    ),
    (
        "a streaming message_start without cache fields",
        {"input_tokens": 472, "output_tokens": 1},
        usage(472, 1),
    ),
    (
        "garbage: negative, fractional, infinite and a bool",
        {
            "input_tokens": -1,
            "output_tokens": 2.4,
            "cache_read_input_tokens": float("inf"),
            "cache_creation_input_tokens": True,
        },
        usage(0, 2),
    ),
    ("no usage", None, usage(0, 0)),
]


class UsageFromOpenAITest(unittest.TestCase):
    def test_maps_each_answer_as_a_dict_and_as_an_sdk_object(self) -> None:
        for name, provider, expected in OPENAI_CASES:
            with self.subTest(name):
                self.assertEqual(usage_from_openai(provider), expected)
                self.assertEqual(usage_from_openai(as_object(provider)), expected)

    def test_keeps_the_whole_prompt_once(self) -> None:
        mapped = usage_from_openai(
            {
                "prompt_tokens": 6512,
                "completion_tokens": 80,
                "prompt_tokens_details": {"cached_tokens": 6400, "cache_write_tokens": 64},
            }
        )
        self.assertEqual(mapped["input"] + mapped["cacheRead"] + mapped["cacheWrite"], 6512)

    def test_rounds_half_up_as_the_typescript_client_does(self) -> None:
        self.assertEqual(usage_from_openai({"prompt_tokens": 2.5, "completion_tokens": 0.5})["input"], 3)
        self.assertEqual(usage_from_openai({"prompt_tokens": 2.5, "completion_tokens": 0.5})["output"], 1)


class UsageFromAnthropicTest(unittest.TestCase):
    def test_maps_each_answer_as_a_dict_and_as_an_sdk_object(self) -> None:
        for name, provider, expected in ANTHROPIC_CASES:
            with self.subTest(name):
                self.assertEqual(usage_from_anthropic(provider), expected)
                self.assertEqual(usage_from_anthropic(as_object(provider)), expected)


if __name__ == "__main__":
    unittest.main()
