"""Recall by ledger section (``kind``): a model's ``{"kind": …}`` call turned into a request, the
section's text (that of ``@compactor/client``, byte for byte: test/client/recall-text-parity.test.ts
compares the two clients), the query the client sends, and a real compaction's ledger read back
from the live API a page at a time."""

import json
import unittest
from typing import Any, Dict, List

from support import JSON_HEADERS, Answer, Seen, StubServer, client, error_body, live, unique

from compactor_client import (
    INVALID_RECALL_ARGUMENTS,
    Client,
    CompactorApiError,
    RecallLedger,
    recall_answer_text,
    recall_query_of,
)


def recall_call(call_id: str, arguments: Any) -> Dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": "recall", "arguments": text}}


def commands_page() -> RecallLedger:
    return {
        "kind": "ledger",
        "section": "commands",
        "entries": [
            {
                "command": "npm test",
                "outcome": "failed",
                "exitCode": 1,
                "firstSeq": 3,
                "lastSeq": 9,
                "count": 2,
            },
            {"command": "npm run build", "outcome": "passed", "firstSeq": 2, "lastSeq": 2, "count": 1},
        ],
        "total": 3,
        "nextCursor": "o2",
        "openErrors": [{"command": "npm test", "seq": 9, "exitCode": 1}],
        "throughSeq": 12,
    }


class LedgerArgumentsTest(unittest.TestCase):
    def test_a_kind_alone_makes_a_ledger_request(self) -> None:
        for kind in ["files", "commands", "facts"]:
            self.assertEqual(recall_query_of(json.dumps({"kind": kind})), {"kind": kind})

    def test_a_kind_with_anything_else_or_an_unknown_kind_makes_none(self) -> None:
        for arguments in [
            {"kind": "secrets"},
            {"kind": "Files"},
            {"kind": None},
            {"kind": ["files"]},
            {"kind": "files", "query": "x"},
            {"kind": "files", "callId": "call_1"},
            {"kind": "facts", "limit": 3},
            {"kind": "files", "cursor": "o2"},
            {"limit": 3},
        ]:
            self.assertIsNone(recall_query_of(arguments), arguments)


class LedgerTextTest(unittest.TestCase):
    def test_commands_with_their_outcomes_and_the_open_errors(self) -> None:
        self.assertEqual(
            recall_answer_text(commands_page()).split("\n"),
            [
                "3 commands in what this session touched, newest first (2 shown):",
                "- npm test (failed, exit code 1)",
                "- npm run build (passed)",
                "Open errors (failed, not passed since):",
                "- npm test",
            ],
        )

    def test_files_facts_and_the_constraints_the_summary_left_out(self) -> None:
        files: RecallLedger = {
            "kind": "ledger",
            "section": "files",
            "entries": [{"path": "src/api.ts", "kind": "modified", "firstSeq": 4, "lastSeq": 6, "count": 2}],
            "total": 1,
            "nextCursor": None,
            "throughSeq": 7,
        }
        self.assertEqual(
            recall_answer_text(files),
            "1 files in what this session touched, newest first:\n- src/api.ts (modified)",
        )
        facts: RecallLedger = {
            "kind": "ledger",
            "section": "facts",
            "entries": [{"kind": "quantity", "text": "30 s", "firstSeq": 1, "lastSeq": 1, "count": 1}],
            "total": 1,
            "nextCursor": None,
            "unlistedConstraints": ["Only use the stdlib."],
            "throughSeq": 7,
        }
        self.assertEqual(
            recall_answer_text(facts),
            "1 facts in what this session touched, newest first:\n- 30 s (quantity)\n"
            "Constraints the summary had no room for:\n- Only use the stdlib.",
        )
        empty = dict(files, entries=[], total=0, openErrors=[], unlistedConstraints=[])
        self.assertEqual(recall_answer_text(empty), "0 files in what this session touched, newest first:")


class LedgerRequestTest(unittest.TestCase):
    """What goes on the wire, against a stub server that answers a commands page."""

    def test_the_client_and_the_tool_send_kind_and_the_page_parameters(self) -> None:
        page = json.dumps(commands_page()).encode()
        answers = [Answer(200, page, JSON_HEADERS), Answer(200, page, JSON_HEADERS)]
        answers.append(Answer(500, error_body("internal", "boom"), JSON_HEADERS))

        def script(index: int, seen: Seen) -> Answer:
            return answers[index]

        with StubServer(script) as server:
            api = Client(server.url, max_retries=0)
            answer = api.recall("s1", kind="commands", limit=2, cursor="o2")
            self.assertEqual(answer, commands_page())
            message = api.execute_recall_tool_call("s1", recall_call("call_k", {"kind": "commands"}))
            self.assertEqual(message["content"], recall_answer_text(commands_page()))
            # An error the model did not cause raises, as for a search.
            with self.assertRaises(CompactorApiError):
                api.execute_recall_tool_call("s1", recall_call("call_l", {"kind": "files"}))
            invalid = api.execute_recall_tool_call("s1", recall_call("call_m", {"kind": "files", "limit": 2}))
            self.assertEqual(invalid["content"], INVALID_RECALL_ARGUMENTS)
        self.assertEqual(
            [seen.path for seen in server.seen],
            [
                "/v1/sessions/s1/recall?kind=commands&limit=2&cursor=o2",
                "/v1/sessions/s1/recall?kind=commands",
                "/v1/sessions/s1/recall?kind=files",
            ],
        )


def coding_turns(count: int) -> List[Dict[str, Any]]:
    """One failed test run, then turns that read a module each (large outputs, something to compact)."""
    failed_run = {
        "type": "tool",
        "callId": "call_test",
        "tool": "bash",
        "status": "error",
        "input": {"command": "npm test"},
        "error": "Exit code 1",
    }
    messages: List[Dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "text": "Run the tests."}]},
        {"role": "assistant", "finish": "tool-calls", "parts": [failed_run]},
    ]
    for i in range(count):
        read = {
            "type": "tool",
            "callId": "call_{}".format(i),
            "tool": "read",
            "status": "completed",
            "input": {"path": "src/module-{}.py".format(i)},
            "output": "value_{} = {}\n".format(i, i) * 200,
        }
        messages.append({"role": "user", "parts": [{"type": "text", "text": "Look at module {}".format(i)}]})
        messages.append({"role": "assistant", "finish": "stop", "parts": [read]})
    return messages


@live
class LedgerLiveTest(unittest.TestCase):
    def test_a_compactions_ledger_a_page_at_a_time_and_through_the_tool(self) -> None:
        api = client()
        sid = unique("l1")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": {"auto": False, "prune": False}})
        before = api.recall(sid, kind="files")
        self.assertEqual((before["total"], before["entries"], before["throughSeq"]), (0, [], 0))

        api.append_messages(sid, coding_turns(6))
        requested = api.request_compaction(sid, keep_recent_tokens=500)["compaction"]
        done = api.wait_for_compaction(requested["id"], timeout=30, poll_interval=0.1)
        self.assertEqual(done["status"], "completed")

        whole = api.recall(sid, kind="files")
        paths = [entry["path"] for entry in whole["entries"]]  # type: ignore[typeddict-item]
        self.assertIn("src/module-0.py", paths)
        self.assertEqual(whole["total"], len(paths))
        self.assertIsNone(whole["nextCursor"])
        self.assertGreater(whole["throughSeq"], 0)
        # Newest first, then the same entries again one page at a time.
        self.assertLess(paths.index("src/module-1.py"), paths.index("src/module-0.py"))
        paged: List[str] = []
        cursor = None
        while True:
            page = api.recall(sid, kind="files", limit=1, cursor=cursor)
            paged += [entry["path"] for entry in page["entries"]]  # type: ignore[typeddict-item]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        self.assertEqual(paged, paths)

        listed = api.execute_recall_tool_call(sid, recall_call("call_k1", {"kind": "commands"}))["content"]
        lines = listed.split("\n")
        self.assertEqual(lines[0], "1 commands in what this session touched, newest first:")
        self.assertTrue(lines[1].startswith("- npm test (failed"), listed)
        self.assertEqual(lines[-2:], ["Open errors (failed, not passed since):", "- npm test"])

        with self.assertRaises(CompactorApiError) as hostile:
            api.recall(sid, kind="files", cursor="../../etc")
        self.assertEqual((hostile.exception.status, hostile.exception.code), (400, "validation_error"))


if __name__ == "__main__":
    unittest.main()
