"""Forms and input checks for the pages: they check input shapes and bounds (every
number bounded, every string length-limited, every choice checked), so that bad input
is a message on the page and never reaches DynamoDB; the service checks the rest, and
its SkillError lands on the field it names."""

from __future__ import annotations

import re
import uuid
from typing import cast

from django import forms

from queues_app.agents.records import AFTER_CALL, AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.records import QueueOrder
from queues_app.centre import keys
from queues_app.shipments.records import DEFAULT_DLQ_REASON

ANY_CHOICE = "any"

# An item's version only ever grows by one a change; far below this, and well inside what
# a DynamoDB number holds (38 digits), so a forged value is refused here, not by DynamoDB.
MAX_VERSION = 2**53 - 1
STALE_FORM = "The version sent with the form is not valid; reload the page and try again."
# Ids this project makes are short (hex); the ones given to it (tests, imports) too.
MAX_ID_LENGTH = 128
ITEM_ID = re.compile(rf"[^\s/\\\x00-\x1f\x7f]{{1,{MAX_ID_LENGTH}}}")
MAX_SELECTED = 500
QUEUE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
MAX_TARGET_LENGTH = 200
MAX_DLQ_MINUTES = 10 * 366 * 24 * 60  # ten years: the trail and the DLQ keep nothing that old


def version_field() -> forms.IntegerField:
    return forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_VERSION,
        widget=forms.HiddenInput,
        error_messages={"invalid": STALE_FORM, "min_value": STALE_FORM, "max_value": STALE_FORM},
    )


def errors_in(form: forms.Form, lead: str = "") -> str:
    """A form's errors in one message: each field by its label, with what is wrong."""
    return lead + "; ".join(
        f"{form.fields[k].label if k in form.fields else k}: {' '.join(map(str, v))}" for k, v in form.errors.items()
    )


def is_item_id(value: object) -> bool:
    """True for something that can be an agent's, a shipment's or a call's id."""
    return isinstance(value, str) and bool(ITEM_ID.fullmatch(value))


class VersionForm(forms.Form):
    """The version an action on one item was shown (optional: without it, no check)."""

    version = version_field()

    def clean(self):
        cleaned = super().clean()
        # A hidden field's error shown as the form's own: the person cannot fix it but reload.
        if "version" in self.errors:
            del self.errors["version"]
            self.add_error(None, STALE_FORM)
        return cleaned

    @property
    def expected_version(self) -> int | None:
        return self.cleaned_data.get("version")

    def problem(self) -> str:
        """What is wrong, in one sentence per field (for a message)."""
        parts = []
        for name, errs in self.errors.items():
            text = " ".join(str(e) for e in errs)
            parts.append(text if name == "__all__" else f"{self.fields[name].label or name}: {text}")
        return "; ".join(parts)


def skill_field_name(dimension: str) -> str:
    return f"skill_{dimension}"


class SkillFields:
    """Forms with one field per skill dimension: where a SkillError about a dimension goes."""

    catalog: SkillCatalog

    def field_for(self, dimension: str | None) -> str | None:
        return skill_field_name(dimension) if dimension in self.catalog.names else None

    def skill_fields(self):
        form = cast(forms.Form, self)
        return [form[skill_field_name(d)] for d in self.catalog.names]


class PreferenceFields(SkillFields):
    """Forms that ask for a caller's preferences: one value, or any, per dimension."""

    def add_preference_fields(self) -> None:
        form = cast(forms.Form, self)
        for dimension, values in self.catalog.dimensions:
            form.fields[skill_field_name(dimension)] = forms.ChoiceField(
                label=dimension.capitalize(),
                choices=[(ANY_CHOICE, "any"), *((v, v) for v in values)],
                initial=ANY_CHOICE,
            )

    @property
    def preferences(self) -> dict[str, str]:
        data = cast(forms.Form, self).cleaned_data
        return {d: data[skill_field_name(d)] for d in self.catalog.names}


class AgentForm(SkillFields, VersionForm):
    name = forms.CharField(max_length=100, strip=True)

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        for dimension, values in catalog.dimensions:
            self.fields[skill_field_name(dimension)] = forms.MultipleChoiceField(
                label=dimension.capitalize(),
                choices=[(v, v) for v in values],
                widget=forms.CheckboxSelectMultiple,
                required=True,
            )

    @classmethod
    def initial_for(cls, agent) -> dict:
        initial = {"name": agent.name, "version": agent.version}
        for dimension, values in agent.skills.items():
            initial[skill_field_name(dimension)] = values
        return initial

    @property
    def skills(self) -> dict[str, list[str]]:
        return {d: self.cleaned_data[skill_field_name(d)] for d in self.catalog.names}


class CallForm(PreferenceFields, forms.Form):
    priority = forms.IntegerField(min_value=0, max_value=keys.MAX_PRIORITY, initial=0)
    order = forms.ChoiceField(choices=[(o, o.upper()) for o in QueueOrder.ALL], initial=QueueOrder.FIFO)
    # Made when the form is drawn: the same form posted twice (a double click, a reload)
    # places one caller, as an API client's Idempotency-Key does.
    request_key = forms.RegexField(regex=r"^[0-9a-f]{32}$", required=False, widget=forms.HiddenInput)

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        if not self.is_bound:
            self.initial["request_key"] = uuid.uuid4().hex
        self.add_preference_fields()


class TransferForm(PreferenceFields, forms.Form):
    """Where a call in progress goes: to new preferences (it waits at its place for an
    agent who fits) or to a named queued agent; and where its agent goes after."""

    to = forms.ChoiceField(choices=[("preferences", "Preferences"), ("agent", "A queued agent")])
    agent_id = forms.CharField(required=False, max_length=64)
    from_agent_id = forms.CharField(max_length=64)  # the agent the page showed on the call
    then = forms.ChoiceField(choices=list(AFTER_CALL.items()), initial="queue")

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        self.add_preference_fields()

    def clean(self):
        data = super().clean() or {}
        if data.get("to") == "agent" and not data.get("agent_id"):
            raise forms.ValidationError("Choose the queued agent to give the call to.")
        return data


class AgentFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=100, label="Name contains")
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *AgentStatus.LABELS.items()])
    skill = forms.ChoiceField(required=False, label="Skill")

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["skill"]).choices = [("", "any skill")] + [
            (f"{d}:{v}", f"{d}: {v}") for d, values in catalog.dimensions for v in values
        ]

    @property
    def skill_filter(self) -> tuple[str, str] | None:
        value = self.cleaned_data.get("skill")
        return tuple(value.split(":", 1)) if value else None


class PriorityForm(VersionForm):
    priority = forms.IntegerField(min_value=0, max_value=keys.MAX_PRIORITY)


class ReasonForm(VersionForm):
    reason = forms.CharField(max_length=300, strip=True, initial=DEFAULT_DLQ_REASON)


class DlqFilterForm(forms.Form):
    reason_contains = forms.CharField(required=False, max_length=200, label="Reason contains")
    older_than_minutes = forms.FloatField(
        required=False, min_value=0, max_value=MAX_DLQ_MINUTES, label="In the DLQ for at least (minutes)"
    )


MAX_TENANT_LENGTH = 64


class ShipmentFilterForm(forms.Form):
    """The shipment lists' filters (GET); every field is optional."""

    id = forms.CharField(required=False, max_length=MAX_ID_LENGTH, strip=True, label="Id starts with")
    tenant = forms.CharField(required=False, max_length=MAX_TENANT_LENGTH, strip=True, label="Tenant")
    priority = forms.TypedChoiceField(
        required=False,
        choices=[("", "any"), *((str(p), str(p)) for p in range(keys.MAX_PRIORITY + 1))],
        coerce=int,
        empty_value=None,
        label="Priority",
    )
    older_than = forms.FloatField(required=False, min_value=0, max_value=MAX_DLQ_MINUTES, label="Older than (min)")

    def clean_id(self):
        value = self.cleaned_data["id"]
        if value and not ITEM_ID.fullmatch(value):
            raise forms.ValidationError("An id has no spaces, slashes or control characters.")
        return value

    def problem(self) -> str:
        return errors_in(self, "Check the filters: ")


CALL_PREFIX_MIN = 4


class CallLookupForm(forms.Form):
    call_id = forms.CharField(max_length=MAX_ID_LENGTH, strip=True, label="Call id or its first characters")

    def clean_call_id(self):
        value = self.cleaned_data["call_id"]
        if not re.fullmatch(r"[A-Za-z0-9_-]+", value):
            raise forms.ValidationError("Call ids are letters, digits, - and _.")
        if len(value) < CALL_PREFIX_MIN:
            raise forms.ValidationError(f"Give at least {CALL_PREFIX_MIN} characters of the id.")
        return value


class AuditFilterForm(forms.Form):
    target = forms.CharField(required=False, max_length=MAX_TARGET_LENGTH, strip=True, label="Item")
