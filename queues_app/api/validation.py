"""A request that fails its schema, named field by field in the API's words: a path,
query or header parameter by the name sent, a body's field by its name (a preference by
its skill dimension, a value inside `data` by its path), with what is wrong and, where a
schema says so (`InputSchema.PROBLEMS`), what it must be."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from ninja.errors import ValidationError, ValidationErrorContext

from queues_app.api.schemas import CURSOR_MAX, IDEMPOTENCY_KEY_MAX, PAGE_MAX, InputSchema
from queues_app.inputs import ID_PROBLEM

BODY_PARAM = "payload"  # the name every operation gives its body
PARAMETER_PROBLEMS = {
    "Idempotency-Key": f"must be 1 to {IDEMPOTENCY_KEY_MAX} characters",
    **{name: ID_PROBLEM for name in ("call_id", "agent_id", "shipment_id")},
    "limit": f"must be a whole number from 1 to {PAGE_MAX}",
    "cursor": f"must be the next_cursor of the previous page (1 to {CURSOR_MAX} characters)",
    "skill": "must be dimension:value, e.g. language:French",
    "status": "one of waiting, offered or assigned",  # the only status a list requires is the calls'
}


class InvalidInput(ValidationError):
    """Input that failed its schema, with each bad field named as people know it."""

    def __init__(self, fields: dict[str, str], errors: list[dict]):
        super().__init__(errors)
        self.fields = fields


def named_fields(error_contexts: list[ValidationErrorContext]) -> dict[str, str]:
    """Every bad field of a request, and what is wrong with it."""
    fields: dict[str, str] = {}
    for context in error_contexts:
        source = context.model.__ninja_param_source__
        schema = _body_schema(context.model) if source == "body" else None
        for error in context.pydantic_validation_error.errors(include_url=False):
            loc = context.model.__ninja_flatten_map_reverse__.get(error["loc"], error["loc"])
            fields.update(_named(source, tuple(loc), error, schema))
    return fields


def _body_schema(param_model) -> type[InputSchema] | None:
    """The schema of the operation's body (the `payload` parameter's, without `| None`)."""
    field = param_model.model_fields.get(BODY_PARAM)
    annotation = field.annotation if field else None
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, InputSchema):
            return candidate
    return None


def _named(source: str, loc: tuple, error: Mapping[str, Any], schema: type[InputSchema] | None) -> dict[str, str]:
    """One pydantic error as {field: what is wrong}, in the API's words."""
    context = error.get("ctx") or {}
    if isinstance(context.get("problems"), dict):  # raised by a schema's own check, already named
        return {str(name): str(problem) for name, problem in context["problems"].items()}
    if source != "body":  # path, query and header parameters: the name as sent
        name = str(loc[-1]) if loc else source
        if error["type"] == "missing":
            return {name: "required" + (f"; {PARAMETER_PROBLEMS[name]}" if name in PARAMETER_PROBLEMS else "")}
        if error["type"] == "literal_error":
            return {name: f"must be one of {_choices(context)}"}
        return {name: PARAMETER_PROBLEMS.get(name) or _sentence(error)}
    if loc and loc[0] == BODY_PARAM:
        loc = loc[1:]
    if not loc:
        # The body as a whole: absent when required (naming the fields it must hold), or not an object.
        if error["type"] == "missing" or error.get("input") is None:
            required = [name for name, field in schema.model_fields.items() if field.is_required()] if schema else []
            if schema and required:
                return {name: schema.PROBLEMS.get(name, "required") for name in required}
            return {"body": "a JSON object is required"}
        return {"body": "must be a JSON object"}
    name = str(loc[0])
    if error["type"] == "extra_forbidden" and len(loc) > 1:  # a field of an object inside the body
        path = name + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc[1:])
        allowed = _nested_fields(schema, loc[:-1])
        return {path: "unknown field" + (f"; allowed: {', '.join(allowed)}" if allowed else "")}
    if error["type"] == "extra_forbidden":
        if not (schema and schema.model_fields):
            return {name: "unknown field; this operation takes no fields"}
        return {name: f"unknown field; allowed: {', '.join(schema.model_fields)}"}
    if schema and name in schema.NAMED_BY_KEY and len(loc) > 1:
        if error.get("input", "") is None:
            # null is not a way of saying "any": it is too easily sent by mistake.
            return {str(loc[1]): f"{loc[1]} may not be null: send 'any', or leave {loc[1]} out, for any value"}
        return {str(loc[1]): f"{loc[1]} must be one value or 'any'"}
    if schema and name in schema.PROBLEMS:
        rule = schema.PROBLEMS[name]
        if error["type"] != "missing" and rule.startswith("required: "):
            # Sent, but not what it must be: not "required", but what is wrong with it.
            return {name: f"{_sentence(error)}: {rule.removeprefix('required: ')}"}
        return {name: rule}
    return {".".join(str(part) for part in loc): _sentence(error)}


def _nested_fields(schema: type[InputSchema] | None, loc: tuple) -> list[str]:
    """The fields of the object at `loc` inside the body (a step of `steps`), when it is a
    schema of its own; [] otherwise."""
    model: Any = schema
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return []
        model = _model_in(fields[part].annotation)
    return list(getattr(model, "model_fields", {}) or {})


def _model_in(annotation: Any) -> Any:
    """The schema an annotation holds, as `list[StepIn] | None` holds StepIn."""
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    for argument in typing.get_args(annotation):
        if (found := _model_in(argument)) is not None:
            return found
    return None


def _choices(context: Mapping[str, Any]) -> str:
    """A literal's allowed values as pydantic lists them ("'waiting' or 'assigned'"),
    without the quotes."""
    return str(context.get("expected", "")).replace("'", "")


def _sentence(error: Mapping[str, Any]) -> str:
    message = str(error.get("msg") or "invalid")
    return message[0].lower() + message[1:] if message else message
