"""Forms and input checks for the pages: they check input shapes and bounds (every
number bounded, every string length-limited, every choice checked), so that bad input
is a message on the page and never reaches DynamoDB; the service checks the rest, and
its SkillError lands on the field it names. Ids, versions, `then`, preferences and names
follow the rules of `queues_app.inputs`, as the API and the admin do."""

from __future__ import annotations

import re
import uuid
from typing import cast

from django import forms
from django.core.exceptions import ValidationError

from queues_app import inputs
from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.records import QueueOrder
from queues_app.centre import keys
from queues_app.ddb.errors import InvalidRequest
from queues_app.operations.bulk import Seen
from queues_app.shipments.records import DEFAULT_DLQ_REASON

STALE_FORM = "The version sent with the form is not valid; reload the page and try again."
MAX_SELECTED = 500
MAX_TARGET_LENGTH = 200
MAX_DLQ_MINUTES = 10 * 366 * 24 * 60  # ten years: the trail and the DLQ keep nothing that old


class VersionField(forms.Field):
    """An item's version as a page showed it (a hidden field): `inputs.parse_version`."""

    widget = forms.HiddenInput
    default_error_messages = {"invalid": STALE_FORM}

    def to_python(self, value):
        if value in self.empty_values:
            return None
        version = inputs.parse_version(str(value).strip())
        if version is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return version


def version_field() -> VersionField:
    return VersionField(required=False)


# The rules' own words, as the API says them (a form's errors are shown after the field's label).


class ItemIdField(forms.CharField):
    """An agent's, a call's or a shipment's id: `inputs.is_item_id`."""

    def __init__(self, **kwargs):
        kwargs["error_messages"] = {"max_length": inputs.ID_PROBLEM, **kwargs.get("error_messages", {})}
        super().__init__(max_length=inputs.ID_MAX, strip=True, **kwargs)

    def validate(self, value):
        super().validate(value)
        if value not in self.empty_values and not inputs.is_item_id(value):
            raise forms.ValidationError(inputs.ID_PROBLEM, code="invalid")


class ThenField(forms.ChoiceField):
    """Where the agent goes once their part in the call ends (`inputs.THEN`); left out,
    back to the queue, as on the API."""

    def __init__(self, **kwargs):
        super().__init__(
            choices=list(inputs.THEN.items()),
            initial=inputs.THEN_DEFAULT,
            required=False,
            label="After the call",
            error_messages={"invalid_choice": inputs.THEN_PROBLEM},
            **kwargs,
        )

    def clean(self, value):
        return super().clean(value) or inputs.THEN_DEFAULT


class PreferenceField(forms.ChoiceField):
    """A caller's preference in one skill dimension: one of its values, or any
    (`inputs.preference_problems`); left out, any, as on the API."""

    def __init__(self, catalog: SkillCatalog, dimension: str, **kwargs):
        self.catalog, self.dimension = catalog, dimension
        choices = [(inputs.ANY_WORD, "any"), *((v, v) for v in catalog.values(dimension))]
        super().__init__(
            label=dimension.capitalize(), choices=choices, initial=inputs.ANY_WORD, required=False, **kwargs
        )

    def validate(self, value):
        problems = inputs.preference_problems(self.catalog, {self.dimension: value})
        if problems:
            raise forms.ValidationError(problems[self.dimension], code="invalid_choice")

    def clean(self, value):
        return super().clean(value) or inputs.ANY_WORD


def queue_name(value: str | None, default: str) -> str:
    """The queue a list or a form names (`default` when none), if it can be one."""
    queue = (value or default).strip()
    if not inputs.is_short_name(queue):
        raise InvalidRequest(f"A queue name is {inputs.SHORT_NAME_PROBLEM}.")
    return queue


NOT_AN_ID = "The selection holds something that is not an id; reload the page and select again."
NO_VERSION_SEEN = (
    f"The selection does not say which version of each item you saw ({inputs.VERSION_RANGE}); reload the page "
    "and select again."
)


def selected(tokens: list[str], limit: int = MAX_SELECTED) -> list[Seen]:
    """The items ticked on a list (a page's or the admin's), each as the list showed it
    (`<id>/<version>[/<call id>]`) and each once. InvalidRequest for more than `limit`
    (an action says how many it touches: it never drops any), and for a token whose ids
    or version are not ones (`inputs`)."""
    tokens = list(dict.fromkeys(token for token in tokens if token))
    if len(tokens) > limit:
        raise InvalidRequest(f"Select at most {limit} items at a time (you sent {len(tokens)}).")
    return [_seen(token) for token in tokens]


def _seen(token: str) -> Seen:
    item_id, _, rest = token.partition("/")
    version_text, _, call_id = rest.partition("/")
    if not inputs.is_item_id(item_id) or (call_id and not inputs.is_item_id(call_id)):
        raise InvalidRequest(NOT_AN_ID)
    version = inputs.parse_version(version_text)
    if version is None:
        raise InvalidRequest(NO_VERSION_SEEN)
    return Seen(item_id, version, call_id or None)


def errors_in(form: forms.Form, lead: str = "") -> str:
    """A form's errors in one message: each field by its label, with what is wrong (the
    form's own errors without a label)."""
    parts = []
    for name, errors in form.errors.items():
        text = " ".join(map(str, errors))
        parts.append(f"{form[name].label}: {text}" if name in form.fields else text)
    return lead + "; ".join(parts)


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
        return errors_in(self)


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
        for dimension in self.catalog.names:
            form.fields[skill_field_name(dimension)] = PreferenceField(self.catalog, dimension)

    @property
    def preferences(self) -> dict[str, str]:
        data = cast(forms.Form, self).cleaned_data
        return {d: data[skill_field_name(d)] for d in self.catalog.names}


def typed_text(value: str) -> None:
    """Text a person types (a name, a reason) holds no control or invisible character."""
    problem = inputs.text_problem(value)
    if problem:
        raise ValidationError(f"It {problem}.")


class AgentForm(SkillFields, VersionForm):
    name = forms.CharField(max_length=inputs.NAME_MAX, strip=True, validators=[typed_text])

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
    agent_id = ItemIdField(required=False)
    from_agent_id = ItemIdField()  # the agent the page showed on the call
    then = ThenField()

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        self.add_preference_fields()

    def clean(self):
        data = super().clean() or {}
        if data.get("to") == "agent" and not data.get("agent_id"):
            raise forms.ValidationError("Choose the queued agent to give the call to.")
        return data


class AfterCallForm(forms.Form):
    """Ending a call from its page: where its agent goes then."""

    then = ThenField()


class ReleaseForm(AfterCallForm):
    """Ending an agent's call from the agents' list: the call the page showed, and where
    the agent goes then."""

    call_id = ItemIdField(
        label="Call",
        error_messages={"required": "the page did not say which call to end; reload the page and try again."},
    )


class AgentFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=inputs.NAME_MAX, label="Name contains")
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
    reason = forms.CharField(max_length=300, strip=True, initial=DEFAULT_DLQ_REASON, validators=[typed_text])


class DlqFilterForm(forms.Form):
    reason_contains = forms.CharField(required=False, max_length=200, label="Reason contains")
    older_than_minutes = forms.FloatField(
        required=False, min_value=0, max_value=MAX_DLQ_MINUTES, label="In the DLQ for at least (minutes)"
    )


class ShipmentFilterForm(forms.Form):
    """The shipment lists' filters (GET); every field is optional."""

    id = ItemIdField(required=False, label="Id starts with")
    tenant = forms.CharField(required=False, max_length=inputs.SHORT_NAME_MAX, strip=True, label="Tenant")
    priority = forms.TypedChoiceField(
        required=False,
        choices=[("", "any"), *((str(p), str(p)) for p in range(keys.MAX_PRIORITY + 1))],
        coerce=int,
        empty_value=None,
        label="Priority",
    )
    older_than = forms.FloatField(required=False, min_value=0, max_value=MAX_DLQ_MINUTES, label="Older than (min)")

    def clean_tenant(self):
        value = self.cleaned_data["tenant"]
        if value and not inputs.is_short_name(value):
            raise forms.ValidationError(f"must be {inputs.SHORT_NAME_PROBLEM}")
        return value

    def problem(self) -> str:
        return errors_in(self, "Check the filters: ")


CALL_PREFIX_MIN = 4


class CallLookupForm(forms.Form):
    call_id = forms.CharField(max_length=inputs.ID_MAX, strip=True, label="Call id or its first characters")

    def clean_call_id(self):
        value = self.cleaned_data["call_id"]
        if not re.fullmatch(r"[A-Za-z0-9_-]+", value):
            raise forms.ValidationError("Call ids are letters, digits, - and _.")
        if len(value) < CALL_PREFIX_MIN:
            raise forms.ValidationError(f"Give at least {CALL_PREFIX_MIN} characters of the id.")
        return value


class AuditFilterForm(forms.Form):
    target = forms.CharField(required=False, max_length=MAX_TARGET_LENGTH, strip=True, label="Item")
