"""The README's agent loop (examples/agent_loop.py), run as written against the live API: with the
LLM stub as the model, the conversation outgrows the provider's window, the loop reports the
overflow, waits for the compaction and carries on; with a scripted model, tool results land in the
history and in the next prompt, and a recall call brings back an output a prune cleared."""

import os
import time
import unittest
from typing import Any, Dict, List

from support import LLM_URL, ROOT, client, live, unique  # first: puts src/ and examples/ on the path

from agent_loop import (  # noqa: E402
    ProviderError,
    Reply,
    ToolCall,
    chat_completions,
    parse_completion,
    run_agent,
)


def turn(i: int, words: int) -> str:
    """A user turn of roughly ``words`` tokens."""
    return "Turn {}: please review this log. ".format(i) + " ".join(
        "w{}x{}".format(i, j) for j in range(words)
    )


@live
class AgentLoopTest(unittest.TestCase):
    @unittest.skipUnless(LLM_URL, "COMPACTOR_LLM_URL names no LLM stub")
    def test_reports_the_overflow_retries_after_the_compaction_and_finishes(self) -> None:
        api = client()
        sid = unique("agent-1")
        # Compactor knows the model's window as 8,000 tokens; the provider (the stub, told by a
        # header) refuses prompts over 2,000 of its tokens: an overflow the auto trigger cannot see
        # coming (the stub counts these turns at about 40 % of Compactor's exact count).
        api.create_session(
            {
                "id": sid,
                "model": {"id": "gpt-4o", "contextWindow": 8000},
                "policy": {"summarizer": {"maxOutputTokens": 1000}},
            }
        )
        model = chat_completions(LLM_URL or "", "stub", "gpt-4o", headers={"x-stub-context-window": "2000"})
        run = run_agent(api, model, sid, [turn(i, 180) for i in range(8)])

        self.assertEqual(len(run.replies), 8)
        self.assertGreater(len(run.overflow_compactions), 0)
        for compaction_id in run.overflow_compactions:
            compaction = api.get_compaction(compaction_id)
            self.assertEqual((compaction["reason"], compaction["status"]), ("overflow", "completed"))
        written = [m for m in api.list_messages(sid, limit=1000)["messages"] if not m["summary"]]
        self.assertEqual(len([m for m in written if m["role"] == "user"]), 8)
        self.assertEqual(len([m for m in written if m["role"] == "assistant"]), 8)
        self.assertIsNotNone(api.get_context(sid)["compactionId"])

    def test_tool_results_go_into_the_history_and_the_next_prompt(self) -> None:
        api = client()
        sid = unique("agent-2")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})
        prompts: List[List[Dict[str, Any]]] = []

        def model(messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Reply:
            prompts.append(messages)
            if len(prompts) == 1:
                calls = [ToolCall("call_a", "read_file", {"path": "a.txt"}), ToolCall("call_b", "rm", {})]
                return Reply("Reading it.", calls, {"input": 50, "output": 10})
            return Reply("a.txt says hello", [], {"input": 90, "output": 5})

        run = run_agent(
            api, model, sid, ["What is in a.txt?"], tools={"read_file": lambda path: "hello from " + path}
        )

        self.assertEqual(run.replies, ["a.txt says hello"])
        second = prompts[1]
        self.assertEqual([m["role"] for m in second], ["user", "assistant", "tool", "tool"])
        self.assertEqual(second[2]["content"], "hello from a.txt")
        self.assertIn("no tool named rm", second[3]["content"])
        history = api.list_messages(sid)["messages"]
        self.assertEqual(
            [(m["role"], m["finish"]) for m in history],
            [("user", None), ("assistant", "tool-calls"), ("assistant", "stop")],
        )
        tools = [p for p in history[1]["parts"] if p["type"] == "tool"]
        self.assertEqual(
            [(p["tool"], p["status"]) for p in tools], [("read_file", "completed"), ("rm", "error")]
        )
        self.assertEqual(tools[0]["input"], {"path": "a.txt"})
        self.assertEqual(history[2]["usage"]["input"], 90)

    def test_a_recall_call_brings_back_what_a_prune_cleared(self) -> None:
        api = client()
        sid = unique("agent-4")
        pruning = {"protectTokens": 0, "minimumTokens": 0, "protectUserTurns": 0}
        policy = {"auto": False, "pruning": pruning}
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": policy})
        read = {"type": "tool", "callId": "call_log", "tool": "bash", "status": "completed"}
        read.update(input={"command": "npm test"}, output="FAIL test/parser.test.ts > nested quotes")
        api.append_messages(
            sid,
            [
                {"role": "user", "parts": [{"type": "text", "text": "Run the tests."}]},
                {"role": "assistant", "parts": [read], "finish": "tool-calls"},  # type: ignore[list-item]
                {"role": "assistant", "parts": [{"type": "text", "text": "One fails."}], "finish": "stop"},
            ],
        )
        api.prune(sid)
        marker = "[Old tool result content cleared — recall call_log]"
        deadline = time.monotonic() + 20
        while marker not in [m.get("content") for m in api.get_context(sid, format="openai")["messages"]]:
            self.assertLess(time.monotonic(), deadline, "the prune job did not clear call_log")
            time.sleep(0.1)
        prompts: List[List[Dict[str, Any]]] = []
        offered: List[List[Dict[str, Any]]] = []

        def model(messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Reply:
            prompts.append(messages)
            offered.append(tools)
            if len(prompts) == 1:
                recall = ToolCall("call_r", "recall", {"callId": "call_log"})
                return Reply("", [recall], {"input": 60, "output": 9})
            return Reply("The parser fails on nested quotes.", [], {"input": 90, "output": 8})

        run = run_agent(api, model, sid, ["Which test failed?"])

        self.assertEqual(run.replies, ["The parser fails on nested quotes."])
        self.assertEqual([t["function"]["name"] for t in offered[0]], ["recall"])
        self.assertEqual(
            prompts[1][-1],
            {
                "role": "tool",
                "tool_call_id": "call_r",
                "content": 'Tool call "call_log" (bash) output:\nFAIL test/parser.test.ts > nested quotes',
            },
        )

    def test_a_provider_error_that_is_no_overflow_is_raised(self) -> None:
        api = client()
        sid = unique("agent-3")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})

        def model(messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Reply:
            raise ProviderError(401, '{"error": {"message": "Incorrect API key provided"}}')

        with self.assertRaises(ProviderError):
            run_agent(api, model, sid, ["hello"])
        self.assertEqual(api.list_compactions(sid)["compactions"], [])


class ParseCompletionTest(unittest.TestCase):
    def test_reports_the_cached_prefix_once(self) -> None:
        """A Chat Completions answer that read most of its prompt from the cache: ``input`` is the rest."""
        answer = {
            "choices": [{"message": {"role": "assistant", "content": "Looks fine."}}],
            "usage": {
                "prompt_tokens": 7304,
                "completion_tokens": 212,
                "prompt_tokens_details": {"cached_tokens": 7168},
                "completion_tokens_details": {"reasoning_tokens": 128},
            },
        }
        reply = parse_completion(answer)
        self.assertEqual(
            reply.usage, {"input": 136, "output": 212, "reasoning": 128, "cacheRead": 7168, "cacheWrite": 0}
        )

    def test_an_answer_without_usage_reports_zeros(self) -> None:
        reply = parse_completion({"choices": [{"message": {"content": None, "tool_calls": []}}]})
        self.assertEqual(reply.usage["input"] + reply.usage["output"], 0)


class ReadmeTest(unittest.TestCase):
    def test_the_readme_quotes_the_example_verbatim(self) -> None:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
            readme = file.read()
        with open(os.path.join(ROOT, "examples", "agent_loop.py"), encoding="utf-8") as file:
            example = file.read()
        quoted = "```python\n" + example + "```" in readme
        self.assertTrue(quoted, "README.md does not quote examples/agent_loop.py verbatim")


if __name__ == "__main__":
    unittest.main()
