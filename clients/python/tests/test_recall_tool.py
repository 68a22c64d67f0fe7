"""The recall tool: a model's recall calls executed by ``execute_recall_tool_call``, against the live
API (an output cleared by a real prune job, then recalled by call id and by words) and, for what the
live API cannot be made to answer here (a purged output), against a stub server."""

import json
import time
import unittest
from typing import Any, Dict, Tuple

from support import JSON_HEADERS, Answer, Seen, StubServer, client, error_body, live, unique

from compactor_client import (
    INVALID_RECALL_ARGUMENTS,
    Client,
    CompactorApiError,
    recall_answer_text,
    recall_query_of,
)

PARSER_SOURCE = "\n".join(
    [
        "export function unquote(text: string): string {",
        "  // nested quotes are where the parser fails: the inner pair closes the outer one",
        "  return text.replace(/^'|'$/g, '');",
        "}",
    ]
)


def recall_call(call_id: str, arguments: Any) -> Dict[str, Any]:
    """A Chat Completions tool call of ``recall``, as a model's answer holds it."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": "recall", "arguments": text}}


class ArgumentsTest(unittest.TestCase):
    def test_a_call_id_or_a_query_make_a_request(self) -> None:
        self.assertEqual(recall_query_of('{"callId": "call_1"}'), {"callId": "call_1"})
        self.assertEqual(recall_query_of('{"query": "parser"}'), {"q": "parser"})
        self.assertEqual(recall_query_of({"query": "parser", "limit": 3}), {"q": "parser", "limit": 3})
        self.assertEqual(recall_query_of('{"query": "parser", "limit": 3.0}'), {"q": "parser", "limit": 3})

    def test_anything_else_makes_none(self) -> None:
        for arguments in [
            "not json",
            "",
            "[]",
            "{}",
            {"callId": "call_1", "query": "parser"},
            {"callId": "call_1", "limit": 2},
            {"callId": None, "query": "parser"},
            {"callId": ""},
            {"query": "parser", "limit": 21},
            {"query": "parser", "limit": 1.5},
            {"query": "parser", "limit": True},
            {"query": ""},
            {"query": "x" * 501},
            {"query": "parser", "path": "src"},
        ]:
            self.assertIsNone(recall_query_of(arguments), arguments)


class AnswerTextTest(unittest.TestCase):
    """The texts of ``@compactor/client``, word for word (test/client/recall-tool.test.ts)."""

    def test_a_recalled_output_and_a_failed_call(self) -> None:
        answer: Dict[str, Any] = {
            "kind": "call",
            "callId": "call_2",
            "tool": "bash",
            "status": "completed",
            "output": "3 failed",
            "error": None,
            "messageId": "m_7",
            "seq": 7,
            "tokens": 3,
            "prunedAt": None,
        }
        self.assertEqual(recall_answer_text(answer), 'Tool call "call_2" (bash) output:\n3 failed')
        self.assertEqual(
            recall_answer_text(dict(answer, output=None)),
            'Tool call "call_2" (bash) completed with no output.',
        )
        failed = dict(answer, status="error", output=None, error="EACCES")
        self.assertEqual(recall_answer_text(failed), 'Tool call "call_2" (bash) failed:\nEACCES')

    def test_a_search_lists_the_passages_best_first(self) -> None:
        hits = [
            {"messageId": "m_7", "seq": 7, "role": "assistant", "source": "cleared", "callId": "call_2"},
            {"messageId": "m_1", "seq": 1, "role": "user", "source": "summarized", "callId": None},
        ]
        results = [
            dict(hits[0], tool="bash", excerpt="FAIL parser", rank=0.6),
            dict(hits[1], tool=None, excerpt="the parser breaks", rank=0.2),
        ]
        search = {"kind": "search", "query": "parser", "results": results}
        self.assertEqual(
            recall_answer_text(search),
            'Found 2 passage(s) for "parser" in the history outside your context, best first:\n\n'
            '[1] seq 7, assistant, cleared output, bash call "call_2":\nFAIL parser\n\n'
            "[2] seq 1, user, summarized:\nthe parser breaks",
        )
        self.assertEqual(
            recall_answer_text(dict(search, results=[])),
            'Nothing found for "parser" in the history outside your context.',
        )


class PurgedOutputTest(unittest.TestCase):
    def test_a_410_is_told_to_the_model_and_other_errors_raise(self) -> None:
        answers = [Answer(410, error_body("gone", "purged"), JSON_HEADERS), Answer(403, b"no")]

        def script(index: int, seen: Seen) -> Answer:
            return answers[index]

        with StubServer(script) as server:
            api = Client(server.url, max_retries=0)
            message = api.execute_recall_tool_call("s1", recall_call("call_r", {"callId": "call_9"}))
            self.assertEqual(
                message,
                {
                    "role": "tool",
                    "tool_call_id": "call_r",
                    "content": 'The output of tool call "call_9" is no longer stored: '
                    "retention has removed it.",
                },
            )
            with self.assertRaises(CompactorApiError):
                api.execute_recall_tool_call("s1", recall_call("call_s", {"callId": "call_9"}))
        self.assertEqual(server.seen[0].path, "/v1/sessions/s1/recall?callId=call_9")

    def test_another_tool_is_the_callers_mistake(self) -> None:
        call = recall_call("call_t", {"path": "a"})
        call["function"]["name"] = "read"
        with self.assertRaises(ValueError):
            Client("http://127.0.0.1:9").execute_recall_tool_call("s1", call)


@live
class RecallLiveTest(unittest.TestCase):
    def pruned_session(self, name: str) -> Tuple[Client, str]:
        """A session whose read of src/parser.ts a prune job has cleared from the context."""
        api = client()
        sid = unique(name)
        pruning = {"protectTokens": 0, "minimumTokens": 0, "protectUserTurns": 0}
        policy = {"auto": False, "pruning": pruning}
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": policy})
        read = {
            "type": "tool",
            "callId": "call_parser",
            "tool": "read",
            "status": "completed",
            "input": {"path": "src/parser.ts"},
            "output": PARSER_SOURCE,
        }
        api.append_messages(
            sid,
            [
                {"role": "user", "parts": [{"type": "text", "text": "Why do quoted arguments break?"}]},
                {"role": "assistant", "parts": [read], "finish": "tool-calls"},  # type: ignore[list-item]
                {"role": "assistant", "parts": [{"type": "text", "text": "One pair."}], "finish": "stop"},
                {"role": "user", "parts": [{"type": "text", "text": "Fix it."}]},
            ],
        )
        api.prune(sid)
        marker = "[Old tool result content cleared — recall call_parser]"
        deadline = time.monotonic() + 20
        while True:
            context = api.get_context(sid, format="openai", tools="recall")
            if any(m["role"] == "tool" and m["content"] == marker for m in context["messages"]):
                self.assertEqual([t["function"]["name"] for t in context["tools"]], ["recall"])
                return api, sid
            self.assertLess(time.monotonic(), deadline, "the prune job did not clear call_parser")
            time.sleep(0.1)

    def test_the_context_offers_the_tool_and_a_call_id_gives_the_output_back(self) -> None:
        api, sid = self.pruned_session("r1")
        tool = api.get_context(sid, format="openai", tools="recall")["tools"][0]
        properties = sorted(tool["function"]["parameters"]["properties"])
        self.assertEqual(properties, ["callId", "kind", "limit", "mediaId", "query"])
        self.assertNotIn("tools", api.get_context(sid, format="openai"))
        message = api.execute_recall_tool_call(sid, recall_call("call_r1", {"callId": "call_parser"}))
        self.assertEqual(
            message,
            {
                "role": "tool",
                "tool_call_id": "call_r1",
                "content": 'Tool call "call_parser" (read) output:\n' + PARSER_SOURCE,
            },
        )

    def test_a_query_finds_the_cleared_output(self) -> None:
        api, sid = self.pruned_session("r2")
        # Right after the marker is served: the query finds the cleared output whether or not the
        # prune job has indexed its words yet.
        found = api.execute_recall_tool_call(sid, recall_call("call_r2", {"query": "nested quotes parser"}))
        head, first = found["content"].split("\n\n")[:2]
        self.assertRegex(head, r'^Found [1-5] passage\(s\) for "nested quotes parser"')
        self.assertTrue(first.startswith('[1] seq 2, assistant, cleared output, read call "call_parser":\n'))
        self.assertIn("nested quotes are where the parser fails", first)
        answer = api.recall(sid, q="zeppelin", limit=2)
        self.assertEqual((answer["kind"], answer["results"]), ("search", []))

    def test_the_models_mistakes_are_answered_not_raised(self) -> None:
        api, sid = self.pruned_session("r3")
        unknown = api.execute_recall_tool_call(sid, recall_call("call_r3", {"callId": "call_nope"}))
        self.assertEqual(
            unknown["content"],
            'No tool call "call_nope" is stored in this session: '
            "use the call id a cleared output's marker names.",
        )
        for arguments in ["not json", {}, {"query": "parser", "limit": 50}, {"query": "par\u0000ser"}]:
            message = api.execute_recall_tool_call(sid, recall_call("call_r4", arguments))
            self.assertEqual(message["content"], INVALID_RECALL_ARGUMENTS, arguments)
        with self.assertRaises(CompactorApiError) as missing:
            api.execute_recall_tool_call(unique("nobody"), recall_call("call_r5", {"query": "parser"}))
        self.assertEqual(missing.exception.status, 404)


if __name__ == "__main__":
    unittest.main()
