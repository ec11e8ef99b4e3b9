"""The evaluation harness's signals carried in RTVI `server-message`s.

The harness's bots speak to the bridge through RTVI server messages whose `data.text` carries a tagged
payload: the agent's `<final_response>…</final_response>` is one predicted action, and an
`<exit>…</exit>` ends the conversation (from the agent: it called EndConversationTool; from the
simulated user: the simulator reports its end).
"""

from __future__ import annotations

import re

from models.events import Rtvi

SERVER_MESSAGE = "server-message"
FINAL_RESPONSE_START = "<final_response>"
FINAL_RESPONSE_END = "</final_response>"
EXIT_TAG = re.compile(r"<exit>.*?</exit>", re.DOTALL)


def server_message_text(event: Rtvi) -> str | None:
    """The text of a `server-message` (its `data.text`, or `data` itself when it is a string), else None."""
    message = event.data.message
    if message.type != SERVER_MESSAGE:
        return None
    data = message.data
    if isinstance(data, dict):
        text = data.get("text")
        return text if isinstance(text, str) else None
    return data if isinstance(data, str) else None


def final_response_payload(text: str) -> str | None:
    """The inside of a text that is exactly one `<final_response>…</final_response>` block, else None."""
    text = text.strip()
    if text.startswith(FINAL_RESPONSE_START) and text.endswith(FINAL_RESPONSE_END):
        return text[len(FINAL_RESPONSE_START) : len(text) - len(FINAL_RESPONSE_END)]
    return None


def has_exit_tag(text: str) -> bool:
    return EXIT_TAG.search(text) is not None
