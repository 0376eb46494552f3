"""The JSON API as a phone system speaks to it: a client with a bearer token, and what
an answer refusing a request holds. (The fixtures `api` and `viewer_api` are in
tests/unit/conftest.py.)"""

import json

from django.test import Client

from queues_app.agents.roster import Agents

# Every operation of the API's OpenAPI document (test_api_docs checks the document
# against it; the fuzzers, that each was fuzzed).
OPERATIONS = {
    ("post", "/api/calls"),
    ("post", "/api/calls/{call_id}/callback"),
    ("post", "/api/calls/{call_id}/callback-result"),
    ("post", "/api/callbacks"),
    ("get", "/api/callbacks"),
    ("put", "/api/callbacks/{call_id}"),
    ("delete", "/api/callbacks/{call_id}"),
    ("get", "/api/calls"),
    ("get", "/api/agents"),
    ("get", "/api/agents/{agent_id}"),
    ("post", "/api/agents"),
    ("patch", "/api/agents/{agent_id}"),
    ("delete", "/api/agents/{agent_id}"),
    ("get", "/api/calls/{call_id}"),
    ("post", "/api/calls/{call_id}/abandon"),
    ("post", "/api/calls/{call_id}/end"),
    ("post", "/api/agents/{agent_id}/available"),
    ("post", "/api/agents/{agent_id}/release"),
    ("post", "/api/agents/{agent_id}/offline"),
    ("post", "/api/agents/{agent_id}/not-ready"),
    ("delete", "/api/agents/{agent_id}/next-status"),
    ("post", "/api/agents/{agent_id}/heartbeat"),
    ("post", "/api/calls/{call_id}/answered"),
    ("post", "/api/calls/{call_id}/transfer"),
    ("get", "/api/queues"),
    ("get", "/api/reports/intervals"),
    ("get", "/api/reports/agents"),
    ("post", "/api/shipments"),
    ("get", "/api/shipments/{shipment_id}"),
    ("get", "/api/callback"),
    ("put", "/api/callback"),
    ("delete", "/api/callback"),
    ("get", "/api/lines"),
    ("get", "/api/lines/{line_id}"),
    ("put", "/api/lines/{line_id}"),
    ("delete", "/api/lines/{line_id}"),
    ("get", "/api/profiles"),
    ("get", "/api/profiles/{profile_id}"),
    ("put", "/api/profiles/{profile_id}"),
    ("delete", "/api/profiles/{profile_id}"),
    ("get", "/api/shipment-queues"),
    ("get", "/api/shipment-queues/{queue_id}"),
    ("put", "/api/shipment-queues/{queue_id}"),
    ("delete", "/api/shipment-queues/{queue_id}"),
}


class Api:
    """Django's test client speaking JSON with a bearer token."""

    def __init__(self, token=None, client=None):
        self.client = client or Client(enforce_csrf_checks=True)
        self.token = token

    def _headers(self, extra):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"} if self.token is not None else {}
        return {**headers, **extra}

    def get(self, path, **extra):
        return self.client.get(path, **self._headers(extra))

    def post(self, path, body=None, *, raw=None, **extra):
        data = raw if raw is not None else ("" if body is None else json.dumps(body))
        return self.client.post(path, data=data, content_type="application/json", **self._headers(extra))

    def put(self, path, body=None, *, raw=None, **extra):
        data = raw if raw is not None else ("" if body is None else json.dumps(body))
        return self.client.put(path, data=data, content_type="application/json", **self._headers(extra))

    def delete(self, path, **extra):
        return self.client.delete(path, **self._headers(extra))

    def patch(self, path, body=None, **extra):
        data = "" if body is None else json.dumps(body)
        return self.client.patch(path, data=data, content_type="application/json", **self._headers(extra))

    # The agent actions as a phone system sends them: naming what it last read.

    def seen(self, agent_id):
        answer = self.get(f"/api/agents/{agent_id}")
        return answer.json() if answer.status_code == 200 else {"version": 1, "call_id": "none"}

    def available(self, agent_id, **extra):
        return self.post(f"/api/agents/{agent_id}/available", {"version": self.seen(agent_id)["version"]}, **extra)

    def offline(self, agent_id, **extra):
        return self.post(f"/api/agents/{agent_id}/offline", {"version": self.seen(agent_id)["version"]}, **extra)

    def release(self, agent_id, then=None, **extra):
        body = {"call_id": self.seen(agent_id)["call_id"] or "none", **({"then": then} if then else {})}
        return self.post(f"/api/agents/{agent_id}/release", body, **extra)


def agent(name, languages, gender):
    return Agents().create(name, {"language": languages, "gender": [gender]})


def assert_problem(response, status, error=None):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["message"]
    if error:
        assert body["error"] == error
    return body
