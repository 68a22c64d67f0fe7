"""The recall tool by media id, as ``@compactor/client`` has it (its recall-tool.media.test.ts): a
call with ``mediaId`` alone becomes ``?mediaId=``, the recalled image is described in the tool
message, and an id no stored part holds is told to the model; other failures raise."""

import json
import unittest
from typing import Any, Dict

from support import JSON_HEADERS, Answer, Seen, StubServer, error_body

from compactor_client import (
    INVALID_RECALL_ARGUMENTS,
    Client,
    CompactorApiError,
    media_not_found_text,
    recall_answer_text,
    recall_query_of,
)

MEDIA_ID = "9f2c4e1b7a3d5c60"


def recall_call(call_id: str, arguments: Any) -> Dict[str, Any]:
    function = {"name": "recall", "arguments": json.dumps(arguments)}
    return {"id": call_id, "type": "function", "function": function}


MEDIA_ANSWER = {
    "kind": "media",
    "mediaId": MEDIA_ID + "0" * 48,
    "messageId": "m_3",
    "seq": 3,
    "callId": "toolu_1",
    "part": {"type": "file", "mime": "image/png", "filename": None, "url": "data:image/png;base64,AAAA"},
    "bytes": 3,
    "width": 1,
    "height": 1,
    "tokens": 85,
}


class MediaIdArgumentsTest(unittest.TestCase):
    def test_a_media_id_alone_makes_a_request(self) -> None:
        self.assertEqual(recall_query_of({"mediaId": MEDIA_ID}), {"mediaId": MEDIA_ID})
        for arguments in [
            {"mediaId": MEDIA_ID, "callId": "c1"},
            {"mediaId": MEDIA_ID, "limit": 2},
            {"mediaId": "NOT-HEX-AT-ALL-XX"},
            {"mediaId": "abc"},
            {"mediaId": 12},
        ]:
            self.assertIsNone(recall_query_of(arguments), arguments)

    def test_the_answer_text_is_the_typescript_clients(self) -> None:
        text = recall_answer_text(MEDIA_ANSWER)
        self.assertEqual(text, "media {}: image/png, 3 bytes, message m_3".format(MEDIA_ID))


class MediaRecallTest(unittest.TestCase):
    def test_found_unknown_refused_and_failing(self) -> None:
        answers = [
            Answer(200, json.dumps(MEDIA_ANSWER).encode(), JSON_HEADERS),
            Answer(404, error_body("not_found", "media not found"), JSON_HEADERS),
            Answer(400, error_body("validation_error", "bad"), JSON_HEADERS),
            Answer(403, b"no"),
        ]

        def script(index: int, seen: Seen) -> Answer:
            return answers[index]

        with StubServer(script) as server:
            api = Client(server.url, max_retries=0)
            found = api.execute_recall_tool_call("s1", recall_call("call_m", {"mediaId": MEDIA_ID}))
            self.assertEqual(found["content"], "media {}: image/png, 3 bytes, message m_3".format(MEDIA_ID))
            missing = api.execute_recall_tool_call("s1", recall_call("call_n", {"mediaId": MEDIA_ID}))
            self.assertEqual(missing["content"], media_not_found_text(MEDIA_ID))
            self.assertIn(MEDIA_ID, missing["content"])
            refused = api.execute_recall_tool_call("s1", recall_call("call_o", {"mediaId": MEDIA_ID}))
            self.assertEqual(refused["content"], INVALID_RECALL_ARGUMENTS)
            with self.assertRaises(CompactorApiError):
                api.execute_recall_tool_call("s1", recall_call("call_p", {"mediaId": MEDIA_ID}))
        self.assertEqual(server.seen[0].path, "/v1/sessions/s1/recall?mediaId=" + MEDIA_ID)


if __name__ == "__main__":
    unittest.main()
