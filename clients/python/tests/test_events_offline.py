"""The SSE parser, and the event iterator's reconnects against a stub server that drops streams."""

import json
import threading
import unittest
from typing import List, get_args, get_type_hints

from support import JSON_HEADERS, Answer, Seen, StubServer, error_body

from compactor_client import (
    SESSION_EVENT_TYPES,
    Client,
    CompactorApiError,
    CompactorTransportError,
    SessionEvent,
    read_sse,
)
from compactor_client.sse import SseCallbacks


def chunks_of(*pieces: bytes):  # type: ignore[no-untyped-def]
    stream = list(pieces) + [b""]
    return lambda: stream.pop(0)


def event(n: int, kind: str = "prune.completed") -> bytes:
    payload = {
        "type": kind,
        "sessionId": "s1",
        "compactionId": None,
        "at": "2026-01-01T00:00:00Z",
        "data": {"n": n},
    }
    return "id: {}-0\nevent: {}\ndata: {}\n\n".format(n, kind, json.dumps(payload)).encode()


SSE_HEADERS = (("Content-Type", "text/event-stream"),)


class SseParserTest(unittest.TestCase):
    def test_blocks_across_chunks_with_every_line_ending(self) -> None:
        comments: List[str] = []
        ids: List[str] = []
        retries: List[int] = []
        callbacks = SseCallbacks(on_comment=comments.append, on_id=ids.append, on_retry=retries.append)
        read = chunks_of(
            b": connected\r\n\r\nid: 7\nevent: a\ndata: one\r",
            b"\ndata: tw",
            "o \u00e9".encode()[:-1],
            "o \u00e9".encode()[-1:] + b"\n\nretry: 1500\rdata:x\r\r: keepalive\n\nid: 9\n\n",
            b"data: no blank line at the end",
        )
        blocks = list(read_sse(read, callbacks))
        self.assertEqual(
            [(b.event, b.data, b.id) for b in blocks], [("a", "one\ntwo \u00e9", "7"), ("message", "x", "7")]
        )
        self.assertEqual(blocks[1].retry, 1500)
        self.assertEqual(comments, ["connected", "keepalive"])
        self.assertEqual(retries, [1500])
        # An id: takes effect when its block ends, even without data.
        self.assertEqual(ids, ["7", "7", "7", "9"])

    def test_a_lone_cr_at_the_end_of_a_chunk_waits_for_the_next(self) -> None:
        blocks = list(read_sse(chunks_of(b"data: a\r", b"\ndata: b\r", b"\r")))
        self.assertEqual([b.data for b in blocks], ["a\nb"])


class EventStreamTest(unittest.TestCase):
    def test_reconnects_after_a_dropped_stream_with_last_event_id(self) -> None:
        def script(n: int, seen: Seen) -> Answer:
            if n == 0:
                # Subscribed, two events (one not the API's: skipped), then the connection drops.
                return Answer(
                    200, headers=SSE_HEADERS, chunks=[b": connected\n\n", event(1), b"data: {}\n\n", event(2)]
                )
            if n == 1:
                return Answer(503, error_body("service_unavailable"), JSON_HEADERS + (("Retry-After", "0"),))
            return Answer(
                200, headers=SSE_HEADERS, chunks=[b": connected\n\n", event(3), event(4, "session.deleted")]
            )

        opens = []
        with StubServer(script) as server:
            client = Client(server.url, "key", base_delay=0.01)
            with client.events("s1", on_open=lambda: opens.append(1)) as stream:
                seen = [(e["type"], e["data"].get("n")) for e in stream]
        self.assertEqual(
            seen,
            [("prune.completed", 1), ("prune.completed", 2), ("prune.completed", 3), ("session.deleted", 4)],
        )
        self.assertEqual(len(opens), 2)
        self.assertEqual(stream.last_event_id, "4-0")
        self.assertNotIn("Last-Event-ID", server.seen[0].headers)
        self.assertEqual([s.headers.get("Last-Event-ID") for s in server.seen[1:]], ["2-0", "2-0"])
        self.assertEqual(server.seen[0].headers["Accept"], "text/event-stream")
        self.assertEqual(server.seen[0].path, "/v1/sessions/s1/events")

    def test_without_reconnect_a_dropped_stream_ends_the_iteration(self) -> None:
        with StubServer(lambda n, seen: Answer(200, headers=SSE_HEADERS, chunks=[event(1)])) as server:
            events = list(Client(server.url, "key").events("s1", reconnect=False, last_event_id="0-5"))
        self.assertEqual(len(events), 1)
        self.assertEqual(len(server.seen), 1)
        self.assertEqual(server.seen[0].headers["Last-Event-ID"], "0-5")

    def test_a_404_is_raised_and_not_retried(self) -> None:
        with StubServer(lambda n, seen: Answer(404, error_body("not_found"), JSON_HEADERS)) as server:
            with self.assertRaises(CompactorApiError) as raised:
                next(iter(Client(server.url, "key").events("s1")))
        self.assertEqual(raised.exception.code, "not_found")
        self.assertEqual(len(server.seen), 1)

    def test_gives_up_after_max_retries_failed_connections(self) -> None:
        with StubServer(lambda n, seen: Answer(200)) as server:
            url = server.url
        with self.assertRaises(CompactorTransportError):
            next(iter(Client(url, "key", max_retries=2, base_delay=0.01).events("s1")))

    def test_close_from_another_thread_ends_a_waiting_loop(self) -> None:
        release = threading.Event()

        def script(n: int, seen: Seen) -> Answer:
            release.wait(5)
            return Answer(200, headers=SSE_HEADERS, chunks=[b": connected\n\n"])

        with StubServer(script) as server:
            stream = Client(server.url, "key").events("s1", read_timeout=10)
            done = threading.Event()
            result: List[object] = []

            def follow() -> None:
                result.extend(stream)
                done.set()

            threading.Thread(target=follow, daemon=True).start()
            threading.Timer(0.2, stream.close).start()
            self.assertTrue(done.wait(3), "the loop did not end after close()")
            release.set()
        self.assertEqual(result, [])
        self.assertTrue(stream.closed)


class EventTypesTest(unittest.TestCase):
    def test_every_event_type_has_its_typed_event_and_payload(self) -> None:
        events = get_args(SessionEvent)
        by_type = {get_args(get_type_hints(cls)["type"])[0]: cls for cls in events}
        self.assertEqual(sorted(by_type), sorted(SESSION_EVENT_TYPES))
        compacted = get_type_hints(by_type["session.compacted"])["data"]
        self.assertEqual(
            set(get_type_hints(compacted)),
            {"tokensBefore", "tokensAfter", "messagesBefore", "messagesAfter", "boundarySeq", "fallback"}
            | {"continueWith", "followUp"},
        )
        self.assertEqual(compacted.__optional_keys__, frozenset({"continueWith", "followUp"}))
        self.assertEqual(get_type_hints(by_type["session.deleted"])["data"].__annotations__, {})


if __name__ == "__main__":
    unittest.main()
