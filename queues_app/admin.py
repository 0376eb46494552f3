"""The admin: API tokens (a normal model), and agents, lines, queues, shipments and tasks read
from DynamoDB through placeholder models (the django-rq pattern): each change list is
our own view inside the admin's frame, with search, filters, pages and actions; an
action first shows how many items it will touch, then acts and says what it did. What
it is sent (the selection's ids and versions, a search, a queue) follows the rules of
`queues_app.inputs`, read through the pages' forms."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from queues_app.agents.records import AgentStatus, not_ready_reasons
from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.errors import DynamoError, InvalidRequest
from queues_app.ddb.paging import Page
from queues_app.forms import queue_name, selected
from queues_app.http.errors import describe
from queues_app.http.roles import can_act
from queues_app.inputs import NAME_MAX, NAME_PROBLEM
from queues_app.lines.profiles import ProfileStore
from queues_app.models import AgentEntry, ApiToken, LineEntry, QueueEntry, ShipmentEntry, TaskEntry
from queues_app.monitoring.overview import LineNow, lines_now
from queues_app.operations import Operations
from queues_app.operations.bulk import BulkReport, Seen, not_ready_action
from queues_app.shipments.listing import LISTS as SHIPMENT_LISTS
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue
from queues_app.tasks.queue import TaskQueue, TaskStatus
from queues_app.templatetags.switchboard import as_json, lines_served, since, skills_text, until
from queues_app.webhooks.events import listen

PAGE_SIZE = 50


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created with `manage.py create_api_token` (the only time the raw token
    is shown); here they are listed and revoked. The hash is never displayed."""

    list_display = ("name", "user", "prefix", "created", "expires_at", "last_used_at", "revoked", "callback_url")
    list_filter = ("revoked",)
    search_fields = ("name", "prefix", "user__username")
    # The callback is the token holder's to set (PUT /api/callback); its secret is never shown.
    fields = ("name", "user", "prefix", "created", "expires_at", "last_used_at", "revoked", "callback_url")
    # Revoking is final (a revoked token may have leaked): only the action sets it.
    readonly_fields = ("user", "prefix", "created", "expires_at", "last_used_at", "revoked", "callback_url")
    actions = ("revoke",)

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        revoking = queryset.filter(revoked=False)
        for token_id in revoking.filter(callback_agents=True).values_list("pk", flat=True):
            listen(default(), token_id, False)  # no more agent events written for it
        count = revoking.update(revoked=True)
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@dataclass
class Column:
    label: str
    value: Callable[[Any], object]


@dataclass
class BulkAction:
    label: str
    run: Callable[[Operations, list[Seen]], BulkReport]
    destructive: bool = False


class DynamoAdmin(admin.ModelAdmin):
    """A read-from-DynamoDB change list. Subclasses say what to list and how."""

    columns: list[Column] = []
    bulk_actions: dict[str, BulkAction] = {}
    filter_name = ""  # the query parameter of the one sidebar filter
    filter_choices: list[tuple[str, str]] = []
    searchable = False

    # --- permissions: staff who may see queues; actions also need a supervisor ------

    def has_view_permission(self, request, obj=None):
        user = request.user
        return user.is_active and user.is_staff and (user.is_superuser or user.has_perm("queues_app.view_queues"))

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    # --- what to show ---------------------------------------------------------------

    def load(self, request) -> Page:
        raise NotImplementedError

    def item_id(self, item) -> str:
        raise NotImplementedError

    def item_link(self, item) -> str | None:
        return None

    def item_seen(self, item) -> str:
        """What a row's checkbox carries: the item as shown (`<id>/<version>`), so that an
        action acts on it only if it has not changed since."""
        return Seen(self.item_id(item), int(getattr(item, "version", 0))).token

    # --- the change list ------------------------------------------------------------

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            return self._run_action(request)
        try:
            page, problem = self.load(request), None
        except DynamoError as exc:
            page, problem = Page([], None), describe(exc)
        rows = [
            {
                "id": self.item_id(item),
                "seen": self.item_seen(item),
                "link": self.item_link(item),
                "cells": [column.value(item) for column in self.columns],
            }
            for item in page.items
        ]
        query = request.GET.copy()
        query.pop("cursor", None)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"{self.model._meta.verbose_name_plural.capitalize()} (DynamoDB)",
            "columns": [c.label for c in self.columns],
            "rows": rows,
            "next_cursor": page.next_cursor,
            "first_page": query.urlencode() if request.GET.get("cursor") else None,
            "query": query.urlencode(),
            "actions": {k: a.label for k, a in self.bulk_actions.items()} if can_act(request.user) else {},
            "filter_name": self.filter_name,
            "filter_choices": self.filter_choices,
            "filter_value": request.GET.get(self.filter_name, ""),
            "searchable": self.searchable,
            "search": request.GET.get("q", ""),
            "problem": problem,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/queues_app/dynamo_changelist.html", context)

    def _run_action(self, request):
        """POST without `confirmed`: the confirmation page. With it: act, tell, redirect."""
        if not can_act(request.user):
            raise PermissionDenied("Only supervisors may change queues.")
        name = request.POST.get("action", "")
        back = request.get_full_path()
        try:
            selection = selected(request.POST.getlist("ids"))
        except InvalidRequest as exc:
            self.message_user(request, exc.message, messages.WARNING)
            return redirect(back)
        ids = [s.item_id for s in selection]
        if name not in self.bulk_actions:
            self.message_user(request, "Choose an action.", messages.WARNING)
            return redirect(back)
        if not ids:
            self.message_user(request, "Select at least one item first.", messages.WARNING)
            return redirect(back)
        action = self.bulk_actions[name]
        if request.POST.get("confirmed") != "1":
            return TemplateResponse(
                request,
                "admin/queues_app/dynamo_confirm.html",
                {
                    **self.admin_site.each_context(request),
                    "opts": self.model._meta,
                    "title": "Are you sure?",
                    "action": name,
                    "action_label": action.label,
                    "ids": ids,
                    "tokens": [s.token for s in selection],
                    "count": len(ids),
                    "destructive": action.destructive,
                },
            )
        ops = Operations(request.user.get_username(), "admin", trace_id=getattr(request, "trace_id", None))
        try:
            report = action.run(ops, selection)
        except DynamoError as exc:
            problem = describe(exc)
            self.message_user(request, f"{problem.title}: {problem.message}", messages.ERROR)
            return redirect(back)
        level = messages.SUCCESS if not report.skipped else messages.WARNING
        self.message_user(request, f"{action.label}: {report.summary}.", level)
        return redirect(back)


def _not_ready_action(reason: str) -> BulkAction:
    action = not_ready_action(reason)
    return BulkAction(f"Set the selected agents not ready: {reason}", lambda ops, ids: ops.on_agents(action, ids))


@admin.register(AgentEntry)
class AgentAdmin(DynamoAdmin):
    columns = [
        Column("Name", lambda a: a.name),
        Column("Id", lambda a: a.agent_id),
        Column("Skills", skills_text),  # with levels above 1: "English, French 5, F"
        # "Blended: support (1), sales (2, after 30 s)", "Every line": the profiles read at
        # most a few seconds ago by this process (one Query a page at most).
        Column("Lines served", lambda a: lines_served(a, ProfileStore(default()).current().profiles)),
        Column("Status", lambda a: a.status_label),
        Column("In this status", lambda a: since(a.status_since)),
    ]
    bulk_actions = {
        "enqueue": BulkAction(
            "Enqueue the selected agents (make available)", lambda ops, ids: ops.on_agents("available", ids)
        ),
        "offline": BulkAction(
            "Log the selected agents off", lambda ops, ids: ops.on_agents("offline", ids), destructive=True
        ),
        **{not_ready_action(reason): _not_ready_action(reason) for reason in not_ready_reasons()},
    }
    filter_name = "status"
    filter_choices = list(AgentStatus.LABELS.items())
    searchable = True

    def load(self, request) -> Page:
        status = request.GET.get("status") or None
        search = request.GET.get("q") or None
        if search and len(search) > NAME_MAX:
            raise InvalidRequest(f"A search by name is {NAME_PROBLEM}.")
        agents = Agents()
        page = agents.list(
            cursor=request.GET.get("cursor"),
            limit=PAGE_SIZE,
            status=status if status in AgentStatus.ALL else None,
            search=search,
        )
        if status and page.items:
            # A status's list is read from its index, which leaves out levels and the lines
            # served: the page's agents whole (one BatchGetItem), in the page's order.
            whole = {a.agent_id: a for a in agents.get_many(a.agent_id for a in page.items)}
            page.items = [whole.get(a.agent_id, a) for a in page.items]
        return page

    def item_id(self, item) -> str:
        return item.agent_id

    def item_link(self, item) -> str:
        return reverse("agent-detail", args=[item.agent_id])

    def item_seen(self, item) -> str:
        return Seen(item.agent_id, item.version, item.call_id).token


def _promise(line: LineNow) -> str:
    target = line.line.service_level_target * 100
    return f"{target:g}% in {line.line.service_level_seconds:g} s"


def _open(line: LineNow) -> str:
    if line.open_now:
        return "open"
    return f"closed, opens {until(to_iso(line.opens_at))}" if line.opens_at else "closed"


def _overflow(line: LineNow) -> str:
    overflow = line.line.overflow
    if overflow is None:
        return "–"
    return f"to {overflow.to_line}" if overflow.to_line else f"ends: {overflow.end}"


def _remove_lines(ops: Operations, selection: list[Seen]) -> BulkReport:
    """Each selected line removed from the version shown; one that changed since, or that
    callers wait on or another line overflows to, is left as it is, saying why."""
    report = BulkReport(did="removed")
    for seen in selection:
        try:
            ops.delete_line(seen.item_id, seen.version)
        except DynamoError as exc:
            report.skipped.append((seen.item_id, describe(exc).message))
        else:
            report.done.append(seen.item_id)
    return report


@admin.register(LineEntry)
class LineAdmin(DynamoAdmin):
    """The lines configured, as they stand; each opens on the Lines page to be edited."""

    columns = [
        Column("Line", lambda n: n.line.line_id),
        Column("Name", lambda n: n.line.name),
        Column("Requires", lambda n: ", ".join(f"{k}: {v}" for k, v in n.line.requires.items()) or "–"),
        Column("Promise", _promise),
        Column("Now", _open),
        Column("Waiting", lambda n: n.waiting),
        Column("At most waiting", lambda n: n.line.max_waiting if n.line.max_waiting is not None else "–"),
        Column("Overflow", _overflow),
        Column("Version", lambda n: n.line.version),
    ]
    bulk_actions = {"remove": BulkAction("Remove the selected lines", _remove_lines, destructive=True)}

    def load(self, request) -> Page:
        center = CallCenter()
        return Page(lines_now(center, center.lines.configured(), now()), None)

    def item_id(self, item) -> str:
        return item.line.line_id

    def item_seen(self, item) -> str:
        return Seen(item.line.line_id, item.line.version).token

    def item_link(self, item) -> str:
        return reverse("line-edit", args=[item.line.line_id])


@admin.register(QueueEntry)
class QueueAdmin(DynamoAdmin):
    columns = [
        Column("Queue", lambda q: q.name),
        Column("Depth", lambda q: q.depth),
        Column("Version", lambda q: q.version),
        Column("Oldest queued agent", lambda q: since(q.oldest_queued_at)),
    ]

    def load(self, request) -> Page:
        return Page(CallCenter().queues(), None)

    def item_id(self, item) -> str:
        return item.name


@admin.register(ShipmentEntry)
class ShipmentAdmin(DynamoAdmin):
    columns = [
        Column("Shipment", lambda s: s.shipment_id),
        Column("State", lambda s: s.state_label),
        Column("Priority", lambda s: s.priority),
        Column("Deadline / visible", lambda s: until(s.visible_at) if s.visible_at else "–"),
        Column("DLQ reason", lambda s: s.dlq_reason or "–"),
        Column("Tenant", lambda s: s.tenant or "–"),
    ]
    bulk_actions = {
        "touch": BulkAction("Touch: send to the back of their priority", lambda ops, ids: ops.touch_many(ids)),
        "dlq": BulkAction(
            "Send to the DLQ",
            lambda ops, ids: ops.send_many_to_dlq(ids, "Sent to the DLQ from the admin"),
            destructive=True,
        ),
        "restore": BulkAction("Restore from the DLQ", lambda ops, ids: ops.restore_many(ids)),
    }
    filter_name = "view"
    filter_choices = [(k, v[0]) for k, v in SHIPMENT_LISTS.items()]

    def load(self, request) -> Page:
        view = request.GET.get("view", "queue")
        _label, lister = SHIPMENT_LISTS.get(view, SHIPMENT_LISTS["queue"])
        queue = queue_name(request.GET.get("queue"), DEFAULT_QUEUE)
        return lister(
            ShipmentQueue().listing,
            queue,
            cursor=request.GET.get("cursor"),
            limit=PAGE_SIZE,
        )

    def item_id(self, item) -> str:
        return item.shipment_id

    def item_link(self, item) -> str:
        return reverse("shipment-detail", args=[item.shipment_id])


@admin.register(TaskEntry)
class TaskAdmin(DynamoAdmin):
    columns = [
        Column("Task", lambda t: t.task_id),
        Column("Status", lambda t: t.status),
        Column("Created", lambda t: since(t.created)),
        Column("Attempts", lambda t: t.attempts),
        Column("Payload", lambda t: format_html("<code>{}</code>", as_json(t.payload))),
    ]
    filter_name = "status"
    filter_choices = [(s, s.capitalize()) for s in TaskStatus.ALL]

    def load(self, request) -> Page:
        status = request.GET.get("status") or TaskStatus.PENDING
        if status not in TaskStatus.ALL:
            status = TaskStatus.PENDING
        return TaskQueue().list(status, cursor=request.GET.get("cursor"), limit=PAGE_SIZE)

    def item_id(self, item) -> str:
        return item.task_id
