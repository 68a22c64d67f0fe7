"""Client message ids: every appended message carries one, so sending a batch twice stores it once."""

import uuid
from typing import Any, Callable, Dict, Mapping


def new_message_id() -> str:
    """A fresh client message id: ``msg_`` and a random UUID."""
    return "msg_{}".format(uuid.uuid4())


def with_message_ids(body: Mapping[str, Any], new_id: Callable[[], str] = new_message_id) -> Dict[str, Any]:
    """The append body with an ``id`` on every message that has none (ids the caller set are kept).

    The API stores a re-posted message once, so the batch can be sent again after a network error
    or a 503 whose transaction committed before the server gave up on it.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return dict(body)
    with_ids = [
        dict(message, id=new_id()) if isinstance(message, Mapping) and "id" not in message else message
        for message in messages
    ]
    return dict(body, messages=with_ids)
