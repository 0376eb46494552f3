"""Forms and input checks for the pages: they check input shapes and bounds (every
number bounded, every string length-limited, every choice checked), so that bad input
is a message on the page and never reaches DynamoDB; the service checks the rest, and
its SkillError lands on the field it names. Ids, versions, `then`, preferences and names
follow the rules of `queues_app.inputs`, as the API and the admin do."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from queues_app import inputs
from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.records import QueueOrder
from queues_app.centre import keys
from queues_app.ddb.clock import centre_zone
from queues_app.ddb.errors import InvalidRequest
from queues_app.lines import profiles
from queues_app.lines.records import LINE_ID, LINE_ID_RULE, Line
from queues_app.operations.bulk import Seen
from queues_app.shipments.records import DEFAULT_DLQ_REASON
from queues_app.steps import LEVEL_MAX, LEVEL_MIN

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


def level_field_name(dimension: str, index: int) -> str:
    """A skill value's level field, named by the value's place in its dimension: a value
    may hold characters an HTML id may not."""
    return f"level_{dimension}_{index}"


class LevelField(forms.TypedChoiceField):
    """A skill value's level, 1 to 5; 1 when not sent (a form drawn before levels). Of a
    dimension the form gives no level (SWITCHBOARD_LEVELLED_SKILLS), a hidden field that
    keeps the agent's level as it is."""

    def __init__(self, value: str, *, shown: bool = True):
        label = f"{value} level"
        problem = f"The level of {value} must be a whole number {LEVEL_MIN} to {LEVEL_MAX}."
        super().__init__(
            label=label,
            choices=[(n, str(n)) for n in range(LEVEL_MIN, LEVEL_MAX + 1)],
            coerce=int,
            empty_value=None,
            required=False,
            initial=LEVEL_MIN,
            widget=forms.Select(attrs={"aria-label": label}) if shown else forms.HiddenInput,
            error_messages={"invalid_choice": problem},
        )


# The agent form's choice that keeps the agent's own lines (no profile id starts with "~").
OWN_LINES = "~own"
PROFILE_GONE = "That routing profile no longer exists (removed meanwhile); choose another."


class AgentForm(SkillFields, VersionForm):
    name = forms.CharField(max_length=inputs.NAME_MAX, strip=True, validators=[typed_text])
    profile = forms.ChoiceField(
        label="Lines served",
        required=False,
        choices=[("", "Every line")],
        error_messages={"invalid_choice": PROFILE_GONE},
    )

    def __init__(
        self,
        *args,
        catalog: SkillCatalog,
        named: Sequence[profiles.Profile] | None = (),
        own: profiles.Serving | None = None,
        **kwargs,
    ):
        """`named`: the routing profiles to choose from (None: they could not be read, and
        the one sent is left for the service to check); `own`: the lines the agent edited
        serves of their own (kept when chosen)."""
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        if named is None:
            sent = str(self.data.get("profile") or "")
            choices = [("", "Every line"), *([(sent, sent)] if profiles.PROFILE_ID.match(sent) else [])]
        else:
            choices = [("", "Every line"), *((p.profile_id, p.name) for p in named)]
        if own:
            choices.append((OWN_LINES, f"Their own lines: {profiles.describe(own)}"))
        cast(forms.ChoiceField, self.fields["profile"]).choices = choices
        for dimension, values in catalog.dimensions:
            self.fields[skill_field_name(dimension)] = forms.MultipleChoiceField(
                label=dimension.capitalize(),
                choices=[(v, v) for v in values],
                widget=forms.CheckboxSelectMultiple,
                required=True,
            )
            shown = dimension in getattr(settings, "SWITCHBOARD_LEVELLED_SKILLS", ())
            for index, value in enumerate(values):
                self.fields[level_field_name(dimension, index)] = LevelField(value, shown=shown)

    @classmethod
    def initial_for(cls, agent) -> dict:
        initial = {"name": agent.name, "version": agent.version}
        initial["profile"] = agent.profile or (OWN_LINES if agent.lines else "")
        for dimension, values in agent.skills.items():
            initial[skill_field_name(dimension)] = values
        held = agent.skills_with_levels
        for dimension, values in SkillCatalog.from_settings().dimensions:
            for index, value in enumerate(values):
                if value in held.get(dimension, {}):
                    initial[level_field_name(dimension, index)] = held[dimension][value]
        return initial

    def skill_rows(self) -> list[tuple[forms.BoundField, list[tuple[object, forms.BoundField]], bool]]:
        """Each dimension's field with its values, each value's box beside its level, and
        whether the levels are shown."""
        rows = []
        for dimension, field in zip(self.catalog.names, self.skill_fields(), strict=True):
            levels = [self[level_field_name(dimension, n)] for n in range(len(self.catalog.values(dimension)))]
            shown = dimension in getattr(settings, "SWITCHBOARD_LEVELLED_SKILLS", ())
            rows.append((field, list(zip(field, levels, strict=True)), shown))
        return rows

    @property
    def skills(self) -> dict[str, dict[str, int]]:
        """The values ticked with their levels (`Agents.create` and `edit` store levels above 1)."""
        data = self.cleaned_data
        return {
            dimension: {
                value: data[level_field_name(dimension, values.index(value))] or LEVEL_MIN
                for value in data[skill_field_name(dimension)]
            }
            for dimension, values in self.catalog.dimensions
        }

    @property
    def serving(self) -> dict[str, str | None]:
        """The lines served as `create_agent` and `update_agent` take them: a named profile,
        or neither (every line); nothing for the agent's own lines kept, or from a form drawn
        before it asked (what the agent serves stays as it is)."""
        choice = self.cleaned_data.get("profile") or None
        if "profile" not in self.data or choice == OWN_LINES:
            return {}
        return {"profile": choice, "lines": None}


class CallForm(PreferenceFields, forms.Form):
    priority = forms.IntegerField(min_value=0, max_value=keys.MAX_PRIORITY, initial=0)
    order = forms.ChoiceField(choices=[(o, o.upper()) for o in QueueOrder.ALL], initial=QueueOrder.FIFO)
    # Made when the form is drawn: the same form posted twice (a double click, a reload)
    # places one caller, as an API client's Idempotency-Key does.
    request_key = forms.RegexField(regex=r"^[0-9a-f]{32}$", required=False, widget=forms.HiddenInput)

    line = forms.ChoiceField(choices=[], required=False, label="Line")

    def __init__(self, *args, catalog: SkillCatalog, lines: list[str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        if not self.is_bound:
            self.initial["request_key"] = uuid.uuid4().hex
        self.add_preference_fields()
        lines = lines or ["main"]
        cast(forms.ChoiceField, self.fields["line"]).choices = [(i, i) for i in lines]
        self.initial.setdefault("line", "main" if "main" in lines else lines[0])


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


class CentreTimeField(forms.CharField):
    """A time on the centre's clock (an `<input type="datetime-local">`): aware, in the
    centre's zone. A time the clocks skip (the hour lost in spring) is refused; one they
    pass twice (autumn) is its first passing."""

    def __init__(self, **kwargs):
        kwargs.setdefault("widget", forms.DateTimeInput(attrs={"type": "datetime-local"}))
        super().__init__(**kwargs)

    def clean(self, value):
        text = super().clean(value)
        try:
            wall = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError("a date and time, such as 2026-11-30T10:00") from None
        if wall.tzinfo is not None:
            raise ValidationError("a time on the centre's clock, with no offset")
        zone = centre_zone()
        moment = wall.replace(tzinfo=zone)
        if moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
            raise ValidationError(f"{text.replace('T', ' ')} does not exist in {zone.key}: the clocks go forward then")
        return moment


class ScheduleCallbackForm(forms.Form):
    """A callback at a time the caller chose, from the Callbacks page."""

    line = forms.CharField(max_length=40)
    number = forms.CharField(max_length=16, help_text="E.164: + then 8 to 15 digits, e.g. +33612345678")
    at = CentreTimeField(label="When")


class MoveCallbackForm(forms.Form):
    at = CentreTimeField(label="New time")


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


WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
HOURS_LINE = re.compile(r"^\s*(\w+)\s*(.*)$")
OVERFLOW_KINDS = [("", "nowhere (no limit)"), ("to_line", "to another line"), ("end", "end the call")]


class LineForm(VersionForm):
    """A line's settings as a supervisor edits them: the hours as one weekday a line
    (`mon 08:00-18:00 19:00-21:00`), the target in percent. Each value is checked by the
    lines' own rules (`lines.records.parse`), whose errors come back on the field."""

    line_id = forms.RegexField(regex=LINE_ID, max_length=40, help_text=LINE_ID_RULE)
    name = forms.CharField(max_length=100, strip=True, validators=[typed_text])
    service_level_seconds = forms.IntegerField(min_value=0, max_value=86_400, label="Answer within (s)")
    service_level_target = forms.IntegerField(min_value=1, max_value=99, label="Share answered in time (%)")
    short_abandon_seconds = forms.IntegerField(min_value=0, max_value=600, initial=0, label="Short abandon (s)")
    hours = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 7}),  # a weekday a row
        help_text="One weekday a line: mon 08:00-18:00 19:00-21:00. Empty: always open.",
    )
    holidays = forms.CharField(required=False, help_text="Dates the line stays closed: 2026-12-25 2027-01-01")
    max_waiting = forms.IntegerField(min_value=1, required=False, label="Most callers waiting")
    max_wait_seconds = forms.IntegerField(min_value=1, required=False, label="Longest wait (s)")
    overflow_kind = forms.ChoiceField(choices=OVERFLOW_KINDS, required=False, label="Past a limit, callers go")
    overflow_to = forms.ChoiceField(choices=[], required=False, label="Line")
    overflow_end = forms.CharField(required=False, max_length=40, label="Reason told to the phone system")
    wrap_up_seconds = forms.IntegerField(
        min_value=1,
        max_value=3600,
        required=False,
        label="Wrap-up limit (s)",
        help_text="After a call of this line an agent in wrap-up is made available past it. Empty: the centre's "
        "(WRAP_UP_SECONDS).",
    )

    FIELDS = {"hours": "hours", "holidays": "holidays", "overflow": "overflow_kind", "overflow.to_line": "overflow_to"}

    def __init__(self, *args, catalog: SkillCatalog, others: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        cast(forms.ChoiceField, self.fields["overflow_to"]).choices = [("", "–"), *[(i, i) for i in others]]
        for dimension, values in catalog.dimensions:
            self.fields[skill_field_name(dimension)] = forms.ChoiceField(
                label=f"Callers need {dimension}", choices=[("", "any"), *[(v, v) for v in values]], required=False
            )
        needs = [skill_field_name(d) for d in catalog.names]
        self.order_fields(["line_id", "name", *needs])  # what callers need, then the promise and the rest

    @classmethod
    def initial_for(cls, line) -> dict:
        data = line.as_dict()
        hours = data.get("hours") or {}
        initial = {
            **{k: v for k, v in data.items() if k not in ("hours", "holidays", "overflow", "requires")},
            "service_level_target": round(line.service_level_target * 100),
            "hours": "\n".join(f"{day} " + " ".join(f"{a}-{b}" for a, b in hours[day]) for day in hours),
            "holidays": " ".join(data.get("holidays") or []),
            "overflow_kind": "to_line" if line.overflow and line.overflow.to_line else ("end" if line.overflow else ""),
            "overflow_to": line.overflow.to_line if line.overflow else "",
            "overflow_end": line.overflow.end if line.overflow and line.overflow.end else "",
        }
        initial.update({skill_field_name(d): v for d, v in line.requires.items()})
        return initial

    def field_for(self, field: str | None) -> str | None:
        """The form field a line's rule names (`hours.mon[0]` is on `hours`)."""
        if not field:
            return None
        if field.startswith("requires."):
            return skill_field_name(field.split(".", 1)[1])
        top = field.split(".")[-1] if field.startswith("lines.") else field
        top = self.FIELDS.get(top, top).split("[")[0].split(".")[0]
        return top if top in self.fields else None

    def settings(self) -> dict:
        """The line as `lines.records.parse` reads it."""
        data = self.cleaned_data
        overflow = None
        if data.get("overflow_kind") == "to_line":
            overflow = {"to_line": data.get("overflow_to") or ""}
        elif data.get("overflow_kind") == "end":
            overflow = {"end": data.get("overflow_end") or ""}
        return {
            "line_id": data["line_id"],
            "name": data["name"],
            "requires": {d: data.get(skill_field_name(d)) or None for d in self.catalog.names},
            "service_level_seconds": data["service_level_seconds"],
            "service_level_target": data["service_level_target"] / 100,
            "short_abandon_seconds": data.get("short_abandon_seconds") or 0,
            "hours": self._hours(data.get("hours") or ""),
            "holidays": (data.get("holidays") or "").replace(",", " ").split(),
            "max_waiting": data.get("max_waiting"),
            "max_wait_seconds": data.get("max_wait_seconds"),
            "overflow": overflow,
            "wrap_up_seconds": data.get("wrap_up_seconds"),
            "version": data.get("version") or 0,
        }

    def _hours(self, text: str) -> dict | None:
        if not text.strip():
            return None
        hours: dict[str, list[list[str]]] = {}
        for row in text.splitlines():
            found = HOURS_LINE.match(row)
            if not found or not row.strip():
                continue
            day, ranges = found.group(1).lower()[:3], found.group(2).replace(",", " ").split()
            hours[day] = [r.split("-", 1) if "-" in r else [r, ""] for r in ranges]
        return hours


PRIORITY_CHOICES = [(n, str(n)) for n in range(profiles.PRIORITY_MIN, profiles.PRIORITY_MAX + 1)]
NO_LINE_SERVED = "Tick at least one line the profile serves."


class ProfileForm(VersionForm):
    """A routing profile as a supervisor edits it: its id (a new one's only), its name,
    and for each of the centre's lines whether it is served, its priority (1 first) and
    its delay. The profiles' own rules (`lines.profiles.parse_profile`) check it again;
    their errors come back on the field."""

    profile_id = forms.RegexField(
        regex=profiles.PROFILE_ID,
        max_length=40,
        label="Profile id",
        help_text=f"{profiles.PROFILE_ID_RULE}; it cannot change later.",
        error_messages={"invalid": f"It must be {profiles.PROFILE_ID_RULE}."},
    )
    name = forms.CharField(max_length=profiles.NAME_MAX, strip=True, validators=[typed_text])

    def __init__(self, *args, lines: Sequence[Line], **kwargs):
        super().__init__(*args, **kwargs)
        self.lines = list(lines)
        for line in self.lines:
            self._add_line(line.line_id, line.name)

    def _add_line(self, line_id: str, name: str) -> None:
        priority = f"The priority of {name} must be a whole number {profiles.PRIORITY_MIN} to {profiles.PRIORITY_MAX}."
        delay = f"The delay of {name} must be a whole number of seconds, 0 to {profiles.MAX_DELAY_SECONDS}."
        self.fields[f"serves_{line_id}"] = forms.BooleanField(
            required=False, label=f"Serves {name}", widget=forms.CheckboxInput(attrs={"aria-label": f"Serves {name}"})
        )
        self.fields[f"priority_{line_id}"] = forms.TypedChoiceField(
            label=f"{name} priority",
            choices=PRIORITY_CHOICES,
            coerce=int,
            empty_value=None,
            required=False,
            initial=profiles.PRIORITY_MIN,
            widget=forms.Select(attrs={"aria-label": f"{name} priority"}),
            error_messages={"invalid_choice": priority},
        )
        self.fields[f"delay_{line_id}"] = forms.IntegerField(
            label=f"{name} delay",
            min_value=0,
            max_value=profiles.MAX_DELAY_SECONDS,
            required=False,
            initial=0,
            widget=forms.NumberInput(attrs={"aria-label": f"{name} delay in seconds"}),
            error_messages={"invalid": delay, "min_value": delay, "max_value": delay},
        )

    @classmethod
    def initial_for(cls, profile: profiles.Profile) -> dict:
        initial: dict[str, object] = {"profile_id": profile.profile_id, "name": profile.name}
        initial["version"] = profile.version
        for line_id, terms in profile.lines.items():
            initial[f"serves_{line_id}"] = True
            initial[f"priority_{line_id}"] = terms.priority
            initial[f"delay_{line_id}"] = terms.delay_seconds
        return initial

    def line_rows(self) -> list[tuple[Line, forms.BoundField, forms.BoundField, forms.BoundField]]:
        """Each line with its three fields: served, priority, delay."""
        return [
            (line, self[f"serves_{line.line_id}"], self[f"priority_{line.line_id}"], self[f"delay_{line.line_id}"])
            for line in self.lines
        ]

    def clean(self):
        cleaned = super().clean()
        if self.lines and not any(cleaned.get(f"serves_{line.line_id}") for line in self.lines):
            self.add_error(None, NO_LINE_SERVED)
        return cleaned

    def field_for(self, field: str | None) -> str | None:
        """The form field a profile's rule names (`lines.sales.delay_seconds` is `delay_sales`)."""
        if not field:
            return None
        parts = field.split(".")
        name = parts[0]
        if name == "lines" and len(parts) > 1:
            term = parts[2] if len(parts) > 2 else ""
            name = {"priority": "priority_", "delay_seconds": "delay_"}.get(term, "serves_") + parts[1]
        return name if name in self.fields else None

    def profile_data(self) -> dict:
        """The profile as `Operations.put_profile` takes it."""
        data = self.cleaned_data
        return {
            "profile_id": data["profile_id"],
            "name": data["name"],
            "lines": {
                line.line_id: {
                    "priority": data.get(f"priority_{line.line_id}") or profiles.PRIORITY_MIN,
                    "delay_seconds": data.get(f"delay_{line.line_id}") or 0,
                }
                for line in self.lines
                if data.get(f"serves_{line.line_id}")
            },
            "version": data.get("version") or 0,
        }
