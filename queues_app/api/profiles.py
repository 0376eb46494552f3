"""/api/profiles: the centre's named routing profiles (the lines an agent serves, each with
a priority and a delay), shared by the agents who name them: listed, read, created,
changed from the version read, and removed while no agent names them."""

from __future__ import annotations

from typing import Annotated, ClassVar

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import Field, StrictInt, StringConstraints

from queues_app import inputs
from queues_app.api.common import api_operations, get_call_center, note_change, replayed
from queues_app.api.openapi import ITEM_CHANGES, READS, answers
from queues_app.api.schemas import InputSchema, Version
from queues_app.lines.profiles import PROFILE_ID, ProfileStore

router = Router()

ProfileId = Annotated[str, StringConstraints(pattern=PROFILE_ID.pattern)]
QueryVersion = Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX)]
LINES_EXAMPLE = {"support": {"priority": 1}, "sales": {"priority": 2, "delay_seconds": 30}}


class ProfileIn(InputSchema):
    """A routing profile: its name and the lines it serves."""

    name: str = Field(description="As supervisors read it (1 to 100 characters).", examples=["Blended"])
    lines: dict[str, dict[str, StrictInt]] = Field(
        description="Each line served, with its `priority` (1 first, to 9) and `delay_seconds` (0 to 3,600: a caller "
        "of that line is offered to these agents once they have waited that long).",
        examples=[LINES_EXAMPLE],
    )
    version: Version | None = Field(
        None, description="The profile's `version` as you last read it; leave out (or 0) to create it.", examples=[2]
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "name": "required: the profile's name, 1 to 100 characters",
        "lines": 'required: the lines served, e.g. {"support": {"priority": 1}, "sales": {"priority": 2}}',
    }


class ProfileOut(Schema):
    profile_id: str
    name: str
    lines: dict[str, dict[str, int]] = Field(description="Each line served: `priority` and `delay_seconds`.")
    version: int


class ProfilesOut(Schema):
    profiles: list[ProfileOut]


@router.get(
    "profiles",
    url_name="api-profiles",
    operation_id="listProfiles",
    summary="The centre's routing profiles",
    **answers({200: (ProfilesOut, "Every named routing profile, by id.", ())}, *READS),
)
def list_profiles(request: HttpRequest):
    return {"profiles": [p.as_dict() for p in ProfileStore(get_call_center().db).all()]}


@router.get(
    "profiles/{profile_id}",
    url_name="api-profile",
    operation_id="getProfile",
    summary="Read a routing profile",
    **answers({200: (ProfileOut, "The routing profile.", ())}, 400, 404, *READS),
)
def profile_detail(request: HttpRequest, profile_id: ProfileId):
    return ProfileStore(get_call_center().db).get(profile_id).as_dict()


@router.put(
    "profiles/{profile_id}",
    url_name="api-profile",
    operation_id="putProfile",
    summary="Create or change a routing profile",
    **answers(
        {
            201: (ProfileOut, "The profile, created (version 1).", ("Location", "Idempotent-Replayed")),
            200: (
                ProfileOut,
                "The profile, changed: its new `version` (`Idempotent-Replayed: true`: made already).",
                ("Location", "Idempotent-Replayed"),
            ),
        },
        *ITEM_CHANGES,
    ),
)
def put_profile(request: HttpRequest, profile_id: ProfileId, payload: ProfileIn, response: HttpResponse):
    """Create the profile (no `version`) or change it from the `version` you read (409 from
    another). Each line must be configured (400 naming it). A change reaches every agent
    who names the profile within seconds, queued or not."""
    data = {"profile_id": profile_id, **payload.model_dump(exclude_unset=True)}
    if data.get("version") is None:
        data.pop("version", None)
    profile, outcome = api_operations(request).put_profile(data)
    note_change(request, "profile.put", profile_id, f"{outcome}, version {profile.version}")
    response["Location"] = f"/api/profiles/{profile_id}"
    replayed(response, outcome == "replayed")
    return Status(201 if outcome == "created" else 200, profile.as_dict())


PROFILE_VERSION = Query(..., description="The profile's `version` as you last read it.")


@router.delete(
    "profiles/{profile_id}",
    url_name="api-profile",
    operation_id="deleteProfile",
    summary="Remove a routing profile",
    **answers({200: (ProfileOut, "The profile as it was.", ())}, *ITEM_CHANGES),
)
def delete_profile(request: HttpRequest, profile_id: ProfileId, version: QueryVersion = PROFILE_VERSION):
    """Remove the profile, from the version you read, while no agent names it (409 naming
    them otherwise)."""
    profile = api_operations(request).delete_profile(profile_id, version)
    note_change(request, "profile.delete", profile_id, "removed")
    return profile.as_dict()
