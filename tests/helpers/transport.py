"""httpx over Django's test client: a client library (switchboard_client) talks to the
application itself, in process."""

import httpx
from django.test import Client


class DjangoTransport(httpx.BaseTransport):
    """Hands each httpx request to Django's test client, and its answer back."""

    def __init__(self):
        self.client = Client()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        headers = {
            f"HTTP_{name.upper().replace('-', '_')}": value
            for name, value in request.headers.items()
            if name.lower() not in ("content-type", "content-length", "host")
        }
        answer = self.client.generic(
            request.method,
            request.url.raw_path.decode(),
            data=request.read(),
            content_type=request.headers.get("Content-Type", ""),
            **headers,
        )
        return httpx.Response(answer.status_code, headers=dict(answer.items()), content=answer.content)
