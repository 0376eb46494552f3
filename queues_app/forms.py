"""Forms for the pages: they check input shapes; the service checks the rest, and its
SkillError lands on the field it names."""

from __future__ import annotations

from django import forms

from queues_app.agents import keys
from queues_app.agents.records import AgentStatus, QueueOrder
from queues_app.agents.skills import SkillCatalog

ANY_CHOICE = "any"


def skill_field_name(dimension: str) -> str:
    return f"skill_{dimension}"


class SkillFields:
    """Forms with one field per skill dimension: where a SkillError about a dimension goes."""

    catalog: SkillCatalog

    def field_for(self, dimension: str | None) -> str | None:
        return skill_field_name(dimension) if dimension in self.catalog.names else None

    def skill_fields(self):
        return [self[skill_field_name(d)] for d in self.catalog.names]


class AgentForm(SkillFields, forms.Form):
    name = forms.CharField(max_length=100, strip=True)
    version = forms.IntegerField(widget=forms.HiddenInput, required=False)

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


class CallForm(SkillFields, forms.Form):
    priority = forms.IntegerField(min_value=0, max_value=keys.MAX_PRIORITY, initial=0)
    order = forms.ChoiceField(choices=[(o, o.upper()) for o in QueueOrder.ALL], initial=QueueOrder.FIFO)

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        self.catalog = catalog
        for dimension, values in catalog.dimensions:
            self.fields[skill_field_name(dimension)] = forms.ChoiceField(
                label=dimension.capitalize(),
                choices=[(ANY_CHOICE, "any"), *((v, v) for v in values)],
                initial=ANY_CHOICE,
            )

    @property
    def preferences(self) -> dict[str, str]:
        return {d: self.cleaned_data[skill_field_name(d)] for d in self.catalog.names}


class AgentFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=100, label="Name contains")
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *AgentStatus.LABELS.items()])
    skill = forms.ChoiceField(required=False, label="Skill")

    def __init__(self, *args, catalog: SkillCatalog, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["skill"].choices = [("", "any skill")] + [
            (f"{d}:{v}", f"{d}: {v}") for d, values in catalog.dimensions for v in values
        ]

    @property
    def skill_filter(self) -> tuple[str, str] | None:
        value = self.cleaned_data.get("skill")
        return tuple(value.split(":", 1)) if value else None


class PriorityForm(forms.Form):
    priority = forms.IntegerField(min_value=0, max_value=keys.MAX_PRIORITY)
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=300, strip=True, initial="Sent to the DLQ by a supervisor")
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)


class DlqFilterForm(forms.Form):
    reason_contains = forms.CharField(required=False, max_length=200, label="Reason contains")
    older_than_minutes = forms.FloatField(required=False, min_value=0, label="In the DLQ for at least (minutes)")
