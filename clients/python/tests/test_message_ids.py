"""Appends carry an id on every message, assigned by the client when the caller gives none, so a
write sent twice (a retry after a gateway error, a 503 whose transaction committed anyway) is
stored once; the same ids go out again on the retry."""

import json
import re
import unittest

from support import JSON_HEADERS, Answer, StubServer, error_body

from compactor_client import Client, with_message_ids

APPENDED = json.dumps(
    {"messages": [{"id": "a", "seq": 1, "created": True}], "status": {}, "compaction": None, "prune": None}
).encode()


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"type": "text", "text": text}]}


class MessageIdsTest(unittest.TestCase):
    def test_a_message_without_an_id_gets_one_and_the_callers_ids_stay(self) -> None:
        with StubServer(lambda n, seen: Answer(201, APPENDED, JSON_HEADERS)) as server:
            batch = [user("first"), dict(user("second"), id="mine-2")]
            Client(server.url, "key").append_messages("s1", batch)
            sent = json.loads(server.seen[0].body)
        self.assertRegex(sent["messages"][0]["id"], r"^msg_[0-9a-f-]{36}$")
        self.assertEqual(sent["messages"][1]["id"], "mine-2")

    def test_the_same_ids_go_out_again_after_a_gateway_answered_in_its_place(self) -> None:
        def script(n: int, _seen: object) -> Answer:
            if n < 2:
                return Answer(502 if n == 0 else 503, error_body("bad_gateway"), JSON_HEADERS)
            return Answer(201, APPENDED, JSON_HEADERS)

        with StubServer(script) as server:
            client = Client(server.url, "key", base_delay=0.001)
            client.append_messages("s1", {"messages": [user("one"), user("two")]})
            ids = [[m["id"] for m in json.loads(seen.body)["messages"]] for seen in server.seen]
        self.assertEqual(len(ids), 3)
        self.assertEqual(ids[1], ids[0])
        self.assertEqual(ids[2], ids[0])
        self.assertEqual(len(set(ids[0])), 2)

    def test_two_calls_get_different_ids(self) -> None:
        first = with_message_ids({"messages": [user("same")]})
        second = with_message_ids({"messages": [user("same")]})
        self.assertNotEqual(first["messages"][0]["id"], second["messages"][0]["id"])
        self.assertTrue(re.match(r"^msg_", first["messages"][0]["id"]))


if __name__ == "__main__":
    unittest.main()
