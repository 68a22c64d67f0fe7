"""The retry rules of the TypeScript client, against a local stub server: what is sent again,
after how long, and what is not."""

import json
import time
import unittest

from support import JSON_HEADERS, Answer, StubServer, error_body

from compactor_client import (
    Client,
    CompactorApiError,
    CompactorResponseError,
    CompactorTransportError,
    RetryPolicy,
    parse_retry_after,
    retry_delay,
)

SESSION = json.dumps({"id": "s1"}).encode()


def refuse_then(status: int, code: str, retry_after: str = "", then: int = 200, times: int = 1):
    """A script: `times` refusals (the API's own error body, `code`), then a success."""

    def script(n: int, _seen: object) -> Answer:
        if n < times:
            headers = JSON_HEADERS + ((("Retry-After", retry_after),) if retry_after else ())
            body = error_body(code) if code != "proxy" else b"<html>502 Bad Gateway</html>"
            return Answer(status, body, headers)
        return Answer(then, SESSION, JSON_HEADERS)

    return script


class RetryTest(unittest.TestCase):
    def test_the_apis_503_is_retried_after_its_retry_after(self) -> None:
        with StubServer(refuse_then(503, "service_unavailable", retry_after="1")) as server:
            started = time.monotonic()
            session = Client(server.url, "key", base_delay=0.01).create_session({"model": {"id": "gpt-4o"}})
        self.assertEqual(session["id"], "s1")
        self.assertEqual([s.method for s in server.seen], ["POST", "POST"])
        # Retry-After: 1 outweighs the 10 ms backoff.
        self.assertGreaterEqual(server.seen[1].at - server.seen[0].at, 0.95)
        self.assertGreaterEqual(time.monotonic() - started, 0.95)
        self.assertEqual(server.seen[1].body, server.seen[0].body)
        self.assertEqual(server.seen[1].headers["Authorization"], "Bearer key")

    def test_429_is_retried_with_backoff_until_max_retries_then_raised(self) -> None:
        with StubServer(refuse_then(429, "too_many_requests", times=10)) as server:
            client = Client(server.url, "key", max_retries=2, base_delay=0.05, random=lambda: 0.0)
            with self.assertRaises(CompactorApiError) as raised:
                client.get_session("s1")
        self.assertEqual(len(server.seen), 3)
        self.assertEqual((raised.exception.status, raised.exception.code), (429, "too_many_requests"))
        # Backoff without jitter: 25 ms, then 50 ms (half of 50 and 100 ms).
        gaps = [b.at - a.at for a, b in zip(server.seen, server.seen[1:])]
        self.assertGreaterEqual(gaps[0], 0.02)
        self.assertGreaterEqual(gaps[1], 0.045)

    def test_a_400_is_raised_at_once(self) -> None:
        with StubServer(refuse_then(400, "validation_error", times=10)) as server:
            with self.assertRaises(CompactorApiError) as raised:
                Client(server.url, "key").create_session({"model": {"id": "gpt-4o"}})
        self.assertEqual(len(server.seen), 1)
        self.assertEqual(raised.exception.code, "validation_error")
        self.assertEqual(raised.exception.request, "POST /v1/sessions")

    def test_a_proxys_503_is_retried_on_a_read_but_not_on_a_write(self) -> None:
        with StubServer(refuse_then(503, "proxy", times=1)) as server:
            self.assertEqual(Client(server.url, "key", base_delay=0.01).get_session("s1")["id"], "s1")
        self.assertEqual(len(server.seen), 2)
        with StubServer(refuse_then(503, "proxy", times=1)) as server:
            with self.assertRaises(CompactorApiError) as raised:
                Client(server.url, "key", base_delay=0.01).request_compaction("s1")
        # The write may have reached the API before the proxy gave up: not sent twice. (An
        # append is: its messages carry ids, so a second copy stores nothing; test_message_ids.)
        self.assertEqual(len(server.seen), 1)
        self.assertEqual(raised.exception.code, "http_error")
        self.assertIn("502 Bad Gateway", raised.exception.message)

    def test_a_compaction_request_with_an_idempotency_key_is_retried_after_a_gateway_error(self) -> None:
        with StubServer(refuse_then(502, "proxy", then=202)) as server:
            result = Client(server.url, "key", base_delay=0.01).request_compaction(
                "s/1", keep_recent_tokens=500, idempotency_key="k-1"
            )
        self.assertTrue(result["created"])
        self.assertEqual(len(server.seen), 2)
        for seen in server.seen:
            self.assertEqual(seen.path, "/v1/sessions/s%2F1/compactions")
            self.assertEqual(seen.headers["Idempotency-Key"], "k-1")
            self.assertEqual(json.loads(seen.body), {"keepRecentTokens": 500})
        with StubServer(refuse_then(502, "proxy", then=202)) as server:
            with self.assertRaises(CompactorApiError):
                Client(server.url, "key", base_delay=0.01).request_compaction("s1")
        self.assertEqual(len(server.seen), 1)

    def test_a_retry_after_beyond_the_limit_is_not_waited_for(self) -> None:
        with StubServer(refuse_then(503, "service_unavailable", retry_after="3600")) as server:
            started = time.monotonic()
            with self.assertRaises(CompactorApiError) as raised:
                Client(server.url, "key").get_session("s1")
        self.assertLess(time.monotonic() - started, 1)
        self.assertEqual(len(server.seen), 1)
        self.assertEqual(raised.exception.retry_after, 3600)

    def test_max_retries_0_turns_retrying_off(self) -> None:
        with StubServer(refuse_then(503, "service_unavailable")) as server:
            with self.assertRaises(CompactorApiError):
                Client(server.url, "key", max_retries=0).get_session("s1")
        self.assertEqual(len(server.seen), 1)

    def test_network_errors_raise_a_transport_error_and_are_not_retried(self) -> None:
        with StubServer(refuse_then(200, "")) as server:
            url = server.url
        started = time.monotonic()
        with self.assertRaises(CompactorTransportError) as raised:
            Client(url, "key").get_session("s1")
        self.assertEqual(raised.exception.request, "GET /v1/sessions/s1")
        self.assertIsInstance(raised.exception.__cause__, OSError)
        self.assertLess(time.monotonic() - started, 1)

    def test_a_2xx_that_is_not_json_is_a_response_error(self) -> None:
        with StubServer(lambda n, seen: Answer(200, b"<html>hello</html>")) as server:
            with self.assertRaises(CompactorResponseError):
                Client(server.url, "key").get_session("s1")

    def test_the_base_url_prefix_query_and_headers(self) -> None:
        with StubServer(
            lambda n, seen: Answer(200, b'{"messages":[],"nextAfterSeq":null}', JSON_HEADERS)
        ) as server:
            client = Client(server.url + "/compactor/", None, headers={"X-Trace": "t1"})
            client.list_messages("a b", after_seq=3)
        seen = server.seen[0]
        self.assertEqual(seen.path, "/compactor/v1/sessions/a%20b/messages?afterSeq=3")
        self.assertEqual(seen.headers["X-Trace"], "t1")
        self.assertNotIn("Authorization", seen.headers)


class RetryRulesTest(unittest.TestCase):
    def test_parse_retry_after(self) -> None:
        self.assertEqual(parse_retry_after("2"), 2.0)
        self.assertEqual(parse_retry_after(" 1.5 "), 1.5)
        self.assertIsNone(parse_retry_after(None))
        self.assertIsNone(parse_retry_after("soon"))
        self.assertIsNone(parse_retry_after("-1"))
        self.assertEqual(parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0), 6.0)
        self.assertEqual(parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", now=40.0), 0.0)

    def test_retry_delay(self) -> None:
        policy = RetryPolicy(max_retries=3, base_delay=0.25, max_delay=1.0, random=lambda: 1.0)
        self.assertEqual([retry_delay(policy, n, None) for n in range(4)], [0.25, 0.5, 1.0, None])
        half = policy._replace(random=lambda: 0.0)
        self.assertEqual(retry_delay(half, 0, None), 0.125)
        self.assertEqual(retry_delay(half, 0, 2.0), 2.0)
        self.assertIsNone(retry_delay(half, 0, 61.0))


if __name__ == "__main__":
    unittest.main()
