"""Every method against the live API (its own database, real queues, workers summarising with the
LLM stub): what the API answers, typed errors, compactions run to completion, events."""

import threading
import unittest
from typing import Any, Dict, List

from support import OTHER_TENANT_KEY, client, live, unique

from compactor_client import CompactorApiError, SessionEvent


def text(role: str, words: str, **extra: Any) -> Dict[str, Any]:
    return dict(role=role, parts=[{"type": "text", "text": words}], **extra)


def turns(count: int) -> List[Dict[str, Any]]:
    """A coding session long enough to compact: the assistant reads files (large outputs)."""
    messages: List[Dict[str, Any]] = []
    for i in range(count):
        messages.append(text("user", "Step {}: look at module {}".format(i, i)))
        messages.append(
            {
                "role": "assistant",
                "finish": "stop",
                "parts": [
                    {
                        "type": "tool",
                        "callId": "call_{}".format(i),
                        "tool": "read",
                        "status": "completed",
                        "input": {"path": "src/module-{}.py".format(i)},
                        "output": "value_{} = {}\n".format(i, i) * 200,
                    },
                    {"type": "text", "text": "Module {} sets value_{}.".format(i, i)},
                ],
            }
        )
    return messages


@live
class SessionsTest(unittest.TestCase):
    def test_create_idempotently_get_patch_and_delete(self) -> None:
        api = client()
        sid = unique("s1")
        body = {"id": sid, "model": {"id": "gpt-4o", "contextWindow": 64000}, "metadata": {"user": "u1"}}
        created = api.create_session(body)  # type: ignore[arg-type]
        self.assertEqual(created["id"], sid)
        self.assertEqual(created["model"]["contextWindow"], 64000)
        self.assertEqual((created["status"]["tokens"], created["status"]["overflow"]), (0, False))
        again = api.create_session(body)  # type: ignore[arg-type]
        self.assertEqual(again["createdAt"], created["createdAt"])

        self.assertEqual(api.get_session(sid)["metadata"], {"user": "u1"})
        patched = api.patch_session(
            sid, {"policy": {"preset": "opencode"}, "metadata": {"user": None, "plan": "pro"}}
        )
        self.assertEqual(patched["metadata"], {"plan": "pro"})
        self.assertEqual(patched["effectivePolicy"]["preset"], "opencode")

        self.assertIsNone(api.delete_session(sid))
        with self.assertRaises(CompactorApiError) as gone:
            api.get_session(sid)
        self.assertEqual((gone.exception.status, gone.exception.code), (404, "not_found"))
        self.assertEqual(gone.exception.request, "GET /v1/sessions/" + sid)

    def test_ids_that_need_encoding(self) -> None:
        api = client()
        sid = unique("a/b?c#d%e")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})
        self.assertEqual(api.get_session(sid)["id"], sid)


@live
class ErrorsTest(unittest.TestCase):
    def test_typed_errors_with_the_apis_body(self) -> None:
        api = client()
        sid = unique("e1")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})

        with self.assertRaises(CompactorApiError) as conflict:
            api.create_session({"id": sid, "model": {"id": "gpt-4o-mini"}})
        self.assertEqual((conflict.exception.status, conflict.exception.code), (409, "conflict"))

        with self.assertRaises(CompactorApiError) as invalid:
            api.create_session({"id": unique("e2"), "model": {"id": "gpt-4o", "contextWindow": 2**31}})
        self.assertEqual((invalid.exception.status, invalid.exception.code), (400, "validation_error"))
        self.assertIn("contextWindow", invalid.exception.message)
        self.assertGreater(len(invalid.exception.details["issues"]), 0)
        # A rejected create wrote nothing.
        with self.assertRaises(CompactorApiError) as missing:
            api.get_session(unique("e2"))
        self.assertEqual(missing.exception.code, "not_found")

        with self.assertRaises(CompactorApiError) as unauthorized:
            client(api_key="not-a-key").get_session(sid)
        self.assertEqual((unauthorized.exception.status, unauthorized.exception.code), (401, "unauthorized"))

        with self.assertRaises(CompactorApiError) as unknown:
            api.get_compaction("cmp_does_not_exist")
        self.assertEqual(unknown.exception.code, "not_found")

    @unittest.skipUnless(OTHER_TENANT_KEY, "COMPACTOR_OTHER_KEY names no second tenant")
    def test_another_tenants_session_does_not_exist(self) -> None:
        sid = unique("t1")
        client().create_session({"id": sid, "model": {"id": "gpt-4o"}})
        with self.assertRaises(CompactorApiError) as other:
            client(api_key=OTHER_TENANT_KEY).get_session(sid)
        self.assertEqual((other.exception.status, other.exception.code), (404, "not_found"))


@live
class MessagesTest(unittest.TestCase):
    def test_append_page_patch_and_context_in_both_formats(self) -> None:
        api = client()
        sid = unique("m1")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})
        appended = api.append_messages(
            sid,
            [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "List the files"}]},
                {
                    "id": "a1",
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool",
                            "callId": "call_1",
                            "tool": "ls",
                            "status": "running",
                            "input": {"dir": "."},
                        }
                    ],
                },
            ],
        )
        self.assertEqual(
            appended["messages"],
            [{"id": "u1", "seq": 1, "created": True}, {"id": "a1", "seq": 2, "created": True}],
        )
        self.assertEqual(appended["status"]["contextMessages"], 2)
        self.assertIsNone(appended["compaction"])
        again = api.append_messages(
            sid,
            {
                "messages": [
                    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "List the files"}]}
                ]
            },
        )
        self.assertEqual(again["messages"], [{"id": "u1", "seq": 1, "created": False}])

        patched = api.patch_message(
            sid,
            "a1",
            {
                "finish": "stop",
                "usage": {"input": 120, "output": 8},
                "parts": [
                    {
                        "type": "tool",
                        "callId": "call_1",
                        "tool": "ls",
                        "status": "completed",
                        "output": "README.md",
                    }
                ],
            },
        )
        self.assertEqual((patched["id"], patched["finish"]), ("a1", "stop"))
        self.assertEqual(patched["status"]["contextMessages"], 2)
        self.assertEqual(
            patched["usage"], {"input": 120, "output": 8, "reasoning": 0, "cacheRead": 0, "cacheWrite": 0}
        )
        self.assertEqual(patched["parts"][0]["output"], "README.md")
        self.assertEqual(patched["parts"][0]["input"], {"dir": "."})

        first = api.list_messages(sid, limit=1)
        self.assertEqual([m["id"] for m in first["messages"]], ["u1"])
        rest = api.list_messages(sid, after_seq=first["nextAfterSeq"])
        self.assertEqual([m["id"] for m in rest["messages"]], ["a1"])
        self.assertIsNone(rest["nextAfterSeq"])

        native = api.get_context(sid)
        self.assertEqual([m["id"] for m in native["messages"]], ["u1", "a1"])
        self.assertGreater(native["tokens"], 0)
        openai = api.get_context(sid, format="openai")
        self.assertEqual([m["role"] for m in openai["messages"]], ["user", "assistant", "tool"])
        self.assertEqual(openai["messages"][2]["content"], "README.md")
        self.assertEqual(openai["messages"][1]["tool_calls"][0]["id"], openai["messages"][2]["tool_call_id"])

    def test_a_context_over_the_window_comes_fitted_or_as_stored(self) -> None:
        api = client()
        sid = unique("fit")
        # No automatic compaction: the view stays over its usable input.
        model = {"id": "gpt-4o", "contextWindow": 4096}
        api.create_session({"id": sid, "model": model, "policy": {"auto": False}})
        paragraph = "The parser must keep every comment. " * 300
        texts = ["Fix the parser.", paragraph, "Now the tests.", paragraph, "Ship it."]
        api.append_messages(sid, [{"role": "user", "parts": [{"type": "text", "text": t}]} for t in texts])
        fitted = api.get_context(sid, wait_ms=50)
        self.assertEqual(fitted["fit"], "interim")
        self.assertLessEqual(fitted["tokens"], fitted["usable"])
        raw = api.get_context(sid, format="openai", fit="none")
        self.assertEqual(raw["fit"], "over")
        self.assertGreater(raw["tokens"], raw["usable"])
        self.assertEqual(len(raw["messages"]), 5)

    def test_a_message_the_api_refuses_writes_nothing(self) -> None:
        api = client()
        sid = unique("m2")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})
        with self.assertRaises(CompactorApiError) as refused:
            # Tool parts belong to assistant messages.
            tool = {"type": "tool", "callId": "c", "tool": "t", "status": "pending"}
            api.append_messages(sid, [{"role": "user", "parts": [tool]}])  # type: ignore[list-item]
        self.assertEqual(refused.exception.code, "validation_error")
        self.assertEqual(api.list_messages(sid)["messages"], [])


@live
class CompactionsTest(unittest.TestCase):
    def test_request_idempotently_list_and_poll_to_completion(self) -> None:
        api = client()
        sid = unique("c1")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": {"auto": False, "prune": False}})
        api.append_messages(sid, turns(6))
        first = api.request_compaction(
            sid, keep_recent_tokens=500, instructions="Keep the module names", idempotency_key=unique("k1")
        )
        self.assertTrue(first["created"])
        self.assertEqual(first["compaction"]["sessionId"], sid)
        self.assertEqual(first["compaction"]["reason"], "manual")
        self.assertEqual(first["compaction"]["keepRecentTokens"], 500)
        again = api.request_compaction(
            sid, keep_recent_tokens=500, instructions="Keep the module names", idempotency_key=unique("k1")
        )
        self.assertEqual((again["created"], again["compaction"]["id"]), (False, first["compaction"]["id"]))
        with self.assertRaises(CompactorApiError) as reused:
            api.request_compaction(sid, keep_recent_tokens=900, idempotency_key=unique("k1"))
        self.assertEqual((reused.exception.status, reused.exception.code), (409, "conflict"))

        page = api.list_compactions(sid, limit=10)
        self.assertEqual([c["id"] for c in page["compactions"]], [first["compaction"]["id"]])
        self.assertIsNone(page["nextBefore"])

        done = api.wait_for_compaction(first["compaction"]["id"], timeout=30, poll_interval=0.1)
        self.assertEqual(done["status"], "completed")
        self.assertLess(done["tokensAfter"], done["tokensBefore"])
        self.assertEqual(
            [s["step"] for s in done["steps"] if s["status"] == "completed"],
            ["prune", "summarize", "finalize"],
        )
        context = api.get_context(sid)
        self.assertEqual(context["compactionId"], done["id"])
        self.assertTrue(context["messages"][0]["summary"])

    def test_revert_restores_the_view_before_the_compaction(self) -> None:
        api = client()
        sid = unique("c3")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": {"auto": False, "prune": False}})
        api.append_messages(sid, turns(6))
        before = api.get_context(sid)
        requested = api.request_compaction(sid, keep_recent_tokens=500)
        done = api.wait_for_compaction(requested["compaction"]["id"], timeout=30, poll_interval=0.1)
        self.assertEqual(done["status"], "completed")

        reverted = api.revert_compaction(done["id"])
        self.assertEqual(reverted["compaction"]["status"], "reverted")
        self.assertIsNotNone(reverted["compaction"]["revertedAt"])
        self.assertEqual(api.get_context(sid)["messages"], before["messages"])
        with self.assertRaises(CompactorApiError) as again:
            api.revert_compaction(done["id"])
        self.assertEqual((again.exception.status, again.exception.code), (409, "conflict"))
        self.assertEqual(again.exception.details["reason"], "not_completed")

    def test_prune_and_overflow_reports(self) -> None:
        api = client()
        sid = unique("c2")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}})
        api.append_messages(sid, [text("user", "hello")])
        self.assertRegex(api.prune(sid)["jobId"], r"^prn_")

        fine = api.report_overflow(sid, {"error": "rate limited, slow down", "status": 429})
        self.assertEqual(fine, {"overflow": False, "kind": None, "matched": None, "compaction": None})
        overflow = api.report_overflow(
            sid,
            {
                "error": "This model's maximum context length is 128000 tokens. "
                "However, your messages resulted in 131000 tokens.",
                "status": 400,
            },
        )
        self.assertEqual((overflow["overflow"], overflow["kind"]), (True, "error"))
        self.assertIsNotNone(overflow["compaction"])
        self.assertEqual(overflow["compaction"]["reason"], "overflow")
        self.assertTrue(overflow["compaction"]["force"])


@live
class EventsTest(unittest.TestCase):
    def follow(self, sid: str, until: str, **options: Any):  # type: ignore[no-untyped-def]
        """Follows the session's events in a thread until an event of type ``until``."""
        opened = threading.Event()
        seen: List[SessionEvent] = []
        ids: List[str] = []
        stream = client().events(sid, on_open=opened.set, **options)

        def run() -> None:
            for event in stream:
                seen.append(event)
                ids.append(stream.last_event_id or "")
                if event["type"] == until:
                    break
            stream.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.addCleanup(stream.close)
        return opened, thread, seen, ids

    def test_a_compactions_events_in_order_then_a_resume_from_last_event_id(self) -> None:
        api = client()
        sid = unique("ev1")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": {"auto": False, "prune": False}})
        api.append_messages(sid, turns(6))
        opened, thread, seen, ids = self.follow(sid, "session.compacted")
        self.assertTrue(opened.wait(10), "the stream did not open")
        compaction = api.request_compaction(sid, keep_recent_tokens=500)["compaction"]
        thread.join(30)
        self.assertFalse(thread.is_alive(), "no session.compacted within 30 s")

        types = [e["type"] for e in seen]
        self.assertEqual(types[0], "compaction.requested")
        self.assertIn("compaction.started", types)
        self.assertLess(types.index("compaction.started"), types.index("compaction.completed"))
        self.assertEqual(types[-1], "session.compacted")
        self.assertTrue(all(e["sessionId"] == sid and e["compactionId"] == compaction["id"] for e in seen))
        self.assertEqual(len(set(ids)), len(ids))

        # A new stream resuming after the first event gets the others again, in order, from the history.
        resumed: List[str] = []
        with api.events(sid, last_event_id=ids[0], reconnect=False) as stream:
            for event in stream:
                resumed.append(event["type"])
                if len(resumed) == len(types) - 1:
                    break
        self.assertEqual(resumed, types[1:])

    def test_the_stream_ends_after_session_deleted(self) -> None:
        api = client()
        sid = unique("ev2")
        api.create_session({"id": sid, "model": {"id": "gpt-4o"}, "policy": {"auto": False}})
        opened, thread, seen, _ = self.follow(sid, "never")
        self.assertTrue(opened.wait(10), "the stream did not open")
        api.delete_session(sid)
        thread.join(10)
        self.assertFalse(thread.is_alive(), "the iteration did not end after session.deleted")
        self.assertEqual(
            [(e["type"], e["compactionId"], e["data"]) for e in seen], [("session.deleted", None, {})]
        )

    def test_a_missing_session_is_a_404(self) -> None:
        with self.assertRaises(CompactorApiError) as missing:
            next(iter(client().events(unique("nope"))))
        self.assertEqual(missing.exception.code, "not_found")


@live
class OperationsTest(unittest.TestCase):
    def test_health_and_readiness(self) -> None:
        self.assertEqual(client().health(), {"status": "ok"})
        ready = client().ready()
        self.assertEqual(ready["status"], "ok")
        self.assertEqual(ready["checks"], {"postgres": "ok", "redis": "ok"})


if __name__ == "__main__":
    unittest.main()
