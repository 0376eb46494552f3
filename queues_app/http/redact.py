"""What an answer may show of what it was sent and of what AWS said.

- a value sent back in a message is quoted at most QUOTE_MAX characters (a 200 KB value
  gets a small refusal, not a copy of itself): `shortened`, `bounded`;
- ARNs (with role names), account ids, access key ids, endpoints and stack traces are
  replaced by a placeholder (`scrub`): only the server log has them.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings

# An answer quotes at most this many characters of a value it was sent (a field's name, a
# value in quotes in a message).
QUOTE_MAX = 100
ELLIPSIS = "…"


def shortened(text: str, limit: int = QUOTE_MAX) -> str:
    """`text` cut to `limit` characters, with an ellipsis when it was cut."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def bounded(text: str) -> str:
    """`text` with every quoted value in it ('...' or "...", as `repr` and the messages
    write them) cut to QUOTE_MAX characters. A quote opens only after a non-word
    character (so the apostrophe of "agent's" opens nothing); one never closed runs to
    the end. One pass, linear in the text however it is made."""
    if len(text) <= QUOTE_MAX:
        return text
    out: list[str] = []
    start = 0  # of the text not yet copied
    at = 0
    while at < len(text):
        mark = text[at]
        if mark not in "'\"" or (at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")):
            at += 1
            continue
        end = _closing(text, at + 1, mark)
        inside = text[at + 1 : end]
        if len(inside) > QUOTE_MAX:
            out.append(text[start : at + 1] + shortened(inside))
            start = end
        at = end + 1
    out.append(text[start:])
    return "".join(out)


def _closing(text: str, at: int, mark: str) -> int:
    """Where the quote opened before `at` closes: the next `mark` not escaped and not
    followed by a word character; the end of the text when there is none."""
    while True:
        found = text.find(mark, at)
        if found < 0:
            return len(text)
        escaped = found > 0 and text[found - 1] == "\\"
        followed = found + 1 < len(text) and (text[found + 1].isalnum() or text[found + 1] == "_")
        if not escaped and not followed:
            return found
        at = found + 1


# --- what people are never shown ---------------------------------------------------------

ARN_SHOWN = "[ARN]"
ENDPOINT_SHOWN = "[endpoint]"
ACCOUNT_SHOWN = "[account id]"
KEY_SHOWN = "[access key]"
TRACE_SHOWN = "[details in the server log]"

_SECRETS = [
    # arn:partition:service:region:account:resource, resource up to a space or quote.
    (re.compile(r"\barn:aws[a-z-]*:[^\s'\"<>,;()\[\]{}]*", re.IGNORECASE), ARN_SHOWN),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\b[\w.-]+\.amazonaws\.com(?:\.cn)?(?::\d+)?(?:/[^\s'\"<>]*)?", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\b[\w.-]+\.(?:aws|amazon)\.dev(?::\d+)?\b", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.])"), ENDPOINT_SHOWN),
    (re.compile(r"\[[0-9a-f:]*:[0-9a-f:]*\](?::\d{1,5})?", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\blocalhost(?::\d{1,5})?\b", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA|ANPA|AGPA)[A-Z0-9]{12,}\b"), KEY_SHOWN),
    (re.compile(r"(?<![\w-])\d{12}(?![\w-])"), ACCOUNT_SHOWN),
]
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*File \"[^\"]*\", line \d+", re.MULTILINE)


def _configured_endpoints() -> list[re.Pattern[str]]:
    """The configured endpoint, and its host (with the port), which may appear alone."""
    url = getattr(settings, "DYNAMODB_ENDPOINT_URL", None) or ""
    found = [url] if url else []
    host = urlsplit(url).netloc if "://" in url else ""
    if host:
        found.append(host)
    return [re.compile(rf"(?<![\w.-]){re.escape(text)}(?![\w-])") for text in sorted(found, key=len, reverse=True)]


def scrub(text: str) -> str:
    """`text` without ARNs, account ids, access key ids, endpoints or stack traces."""
    if not text:
        return text
    trace = _TRACEBACK.search(text)
    if trace:
        text = text[: trace.start()].rstrip() + " " + TRACE_SHOWN
    for endpoint in _configured_endpoints():
        text = endpoint.sub(ENDPOINT_SHOWN, text)
    for pattern, shown in _SECRETS:
        text = pattern.sub(shown, text)
    return text.strip()
