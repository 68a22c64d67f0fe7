"""A Server-Sent Events reader: bytes in, ``SseBlock``s out (the WHATWG parsing rules)."""

import codecs
import re
from typing import Callable, Iterator, NamedTuple, Optional

_NEWLINE = re.compile(r"\r\n|\r|\n")


class SseBlock(NamedTuple):
    """One dispatched event block."""

    #: ``event:`` (default ``message``).
    event: str
    #: The ``data:`` lines joined with newlines.
    data: str
    #: ``id:`` when the block (or an earlier one) set it.
    id: Optional[str]
    #: ``retry:`` in milliseconds, when the block set it.
    retry: Optional[int]


class SseCallbacks(NamedTuple):
    """What the parser saw besides events: comments (``: connected``, ``: keepalive``), and
    ``retry:`` and ``id:`` as they take effect (``retry:`` at once, ``id:`` when its block ends,
    even without data)."""

    on_comment: Optional[Callable[[str], None]] = None
    on_retry: Optional[Callable[[int], None]] = None
    on_id: Optional[Callable[[str], None]] = None


def read_sse(read_chunk: Callable[[], bytes], callbacks: SseCallbacks = SseCallbacks()) -> Iterator[SseBlock]:
    """Parses a text/event-stream body into blocks as they complete.

    ``read_chunk`` returns the next bytes, ``b""`` at the end. Comments are reported and skipped;
    a block without ``data:`` dispatches nothing (as in browsers' EventSource).
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buffer = ""
    event, data, last_id, retry = "message", "", None, None  # type: str, str, Optional[str], Optional[int]
    has_data = False
    ended = False
    while not ended:
        chunk = read_chunk()
        ended = chunk == b""
        buffer += decoder.decode(chunk, final=ended)
        while True:
            match = _NEWLINE.search(buffer)
            if match is None:
                break
            newline = match.start()
            # A lone \r at the very end may be the first half of \r\n: wait for the next chunk
            # (at the end of the stream there is none: it ends the line).
            if not ended and match.group() == "\r" and newline == len(buffer) - 1:
                break
            line = buffer[:newline]
            buffer = buffer[match.end() :]
            if line == "":
                if last_id is not None and callbacks.on_id:
                    callbacks.on_id(last_id)
                if has_data:
                    yield SseBlock(event, data[:-1], last_id, retry)
                event, data, retry, has_data = "message", "", None, False
                continue
            if line.startswith(":"):
                if callbacks.on_comment:
                    callbacks.on_comment(line[1:].lstrip())
                continue
            field, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if field == "event":
                event = value
            elif field == "data":
                data += value + "\n"
                has_data = True
            elif field == "id" and "\0" not in value:
                last_id = value
            elif field == "retry" and value.isdigit() and value.isascii():
                retry = int(value)
                if callbacks.on_retry:
                    callbacks.on_retry(retry)
