"""The exceptions the client raises (the Python side of ``@compactor/client``'s errors.ts)."""

import json
from typing import Any, Optional


class CompactorError(Exception):
    """Base of every exception the client raises."""

    def __init__(self, message: str, request: str) -> None:
        super().__init__(message)
        self.message = message
        #: What the request was: ``"POST /v1/sessions"``.
        self.request = request


class CompactorApiError(CompactorError):
    """A non-2xx answer of the API, with its error body.

    ``code`` is the API's error code (``validation_error``, ``unauthorized``, ``not_found``,
    ``conflict``, ``too_many_requests``, ``service_unavailable``, …) or ``http_error`` when the body
    was not the API's (a proxy's page). ``details`` holds a 400's failing paths in ``details["issues"]``.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any,
        request: str,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message, request)
        self.status = status
        self.code = code
        self.details = details
        #: The answer's ``Retry-After`` in seconds, when it had one.
        self.retry_after = retry_after

    def __str__(self) -> str:
        return "{} {}: {} ({})".format(self.request, self.status, self.message, self.code)

    def __repr__(self) -> str:
        return "CompactorApiError(status={!r}, code={!r}, message={!r}, request={!r})".format(
            self.status, self.code, self.message, self.request
        )

    @classmethod
    def from_body(
        cls, status: int, reason: str, body: bytes, request: str, retry_after: Optional[float] = None
    ) -> "CompactorApiError":
        """Reads an error answer; a body that is not the API's shape keeps its first 500 characters."""
        text = body.decode("utf-8", errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None  # Not JSON: a proxy's page, a truncated body.
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if (
            isinstance(error, dict)
            and isinstance(error.get("code"), str)
            and isinstance(error.get("message"), str)
        ):
            return cls(status, error["code"], error["message"], error.get("details"), request, retry_after)
        message = text[:500] or reason or "HTTP {}".format(status)
        return cls(status, "http_error", message, None, request, retry_after)


class CompactorTransportError(CompactorError):
    """The request got no HTTP answer: connection refused or reset, a timeout, a broken stream.

    Not retried by the client: the request may have been written. Appends are idempotent by
    message id and compaction requests by ``idempotency_key``, so retrying those is safe.
    """

    def __init__(self, message: str, request: str, cause: Optional[BaseException] = None) -> None:
        super().__init__(message, request)
        self.__cause__ = cause

    def __str__(self) -> str:
        return "{}: {}".format(self.request, self.message)


class CompactorResponseError(CompactorError):
    """A 2xx answer that is not what the contract says (a body that is not JSON)."""

    def __str__(self) -> str:
        return "{}: {}".format(self.request, self.message)
