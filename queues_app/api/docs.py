"""The API's OpenAPI document (`/api/openapi.json`) and a page that lists it (`/api/docs`).

The document is for a logged-in person or a machine with a token; the page needs a
session login, like every page. The page is rendered here from the document, with the
site's own stylesheet: no JavaScript and nothing from a CDN, so it works offline and
under the site's Content-Security-Policy. Generators and tools (Swagger UI, Postman,
schemathesis) read the document itself.
"""

from __future__ import annotations

import json
from functools import lru_cache

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import reverse

from queues_app.api.application import openapi_document
from queues_app.api.auth import authenticate, bearer_token
from queues_app.http import errors
from queues_app.http.errors import ApiProblem, json_answer

METHOD_ORDER = ("get", "post", "put", "patch", "delete")


def api_prefix() -> str:
    """Where the API is mounted ("/api/")."""
    return reverse("api-openapi").removesuffix("openapi.json")


@lru_cache(maxsize=4)
def document(prefix: str) -> dict:
    return openapi_document(prefix)


@login_not_required
def openapi_json(request):
    """The OpenAPI 3.1 document, for a logged-in person or a bearer token."""
    if not request.user.is_authenticated:
        if bearer_token(request) is None:
            return json_answer(
                errors.unauthenticated(
                    "The API's description is for logged-in users and API clients: log in, or send a bearer token."
                )
            )
        try:
            authenticate(request)
        except ApiProblem as exc:
            return json_answer(exc.problem)
    return JsonResponse(document(api_prefix()), json_dumps_params={"indent": 1})


def docs_page(request):
    """Every operation of the API: parameters, body, answers, and the schemas they use."""
    spec = document(api_prefix())
    return render(
        request,
        "queues_app/api_docs.html",
        {
            "spec": spec,
            "operations": list(_operations(spec)),
            "schemas": [
                {"name": name, "json": json.dumps(schema, indent=2)}
                for name, schema in spec.get("components", {}).get("schemas", {}).items()
            ],
            "openapi_url": reverse("api-openapi"),
        },
    )


def _operations(spec: dict):
    for path, methods in spec.get("paths", {}).items():
        for method in sorted(methods, key=lambda m: METHOD_ORDER.index(m) if m in METHOD_ORDER else 99):
            operation = methods[method]
            body = operation.get("requestBody")
            yield {
                "id": operation.get("operationId", f"{method}-{path}"),
                "method": method.upper(),
                "path": path,
                "summary": operation.get("summary", ""),
                "description": " ".join(operation.get("description", "").split()),
                "parameters": [
                    {
                        "name": p["name"],
                        "in": p["in"],
                        "required": p.get("required", False),
                        "type": _type_of(p.get("schema", {})),
                        "description": p.get("description") or p.get("schema", {}).get("description", ""),
                    }
                    for p in operation.get("parameters", [])
                ],
                "body": {"required": body.get("required", False), "type": _type_of(_json_schema(body))}
                if body
                else None,
                "responses": [
                    {
                        "status": status,
                        "description": answer.get("description", ""),
                        "type": _type_of(_json_schema(answer)),
                        "headers": sorted(answer.get("headers", {})),
                    }
                    for status, answer in sorted(operation.get("responses", {}).items(), key=lambda kv: str(kv[0]))
                ],
            }


def _json_schema(part: dict) -> dict:
    return part.get("content", {}).get("application/json", {}).get("schema", {})


def _type_of(schema: dict) -> str:
    """A short name for a schema: its component's name, or its type and limits."""
    if not schema:
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_type_of(option) for option in schema["anyOf"])
    kind = schema.get("type", "")
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    limits = []
    for word, key in (("from", "minimum"), ("to", "maximum"), ("min length", "minLength"), ("max length", "maxLength")):
        if key in schema:
            limits.append(f"{word} {schema[key]}")
    if "pattern" in schema:
        limits.append(f"pattern {schema['pattern']}")
    return f"{kind} ({', '.join(limits)})" if limits else str(kind)
