"""Shipments: the queue in priority order, in flight with deadlines, delayed, and the
DLQ with failure reasons; touch, reprioritize, send to the DLQ, restore, remove.

Looking never changes anything: lists read the indexes and BatchGetItem, never receive.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from queues_app import inputs
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.ddb.clock import now
from queues_app.ddb.errors import InvalidRequest, NotFound
from queues_app.forms import (
    DEFAULT_DLQ_REASON,
    DlqFilterForm,
    PriorityForm,
    ReasonForm,
    ShipmentFilterForm,
    VersionForm,
    errors_in,
    queue_name,
)
from queues_app.shipments.listing import LISTS, ShipmentFilter, in_list
from queues_app.shipments.named import NamedQueues
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue
from queues_app.shipments.records import SPILLOVER_QUEUE, ShipmentState
from queues_app.views.common import (
    NO_VERSION,
    ask_first,
    back_url,
    bulk,
    check_id,
    confirm,
    confirmed,
    list_filters,
    operations,
    repeat_or_done,
    seen_version,
    supervisor_action,
)
from queues_app.webhooks.events import CALLBACK_QUEUE

PAGE_SIZE = 25
FILTER_RESTORE_LIMIT = 200  # more than this from the page: use `manage.py restore_shipments`


def _queue_name(query) -> str:
    """The queue a query (a list's) or a form names; the live queue when it names none."""
    return queue_name(query.get("queue"), DEFAULT_QUEUE)


def _filters(query) -> tuple[ShipmentFilter, str]:
    """The list's filters from a query, and the same as a query string for links."""
    form = ShipmentFilterForm(query)
    if not form.is_valid():
        raise InvalidRequest(form.problem())
    data = form.cleaned_data
    filters = ShipmentFilter(
        id_prefix=data.get("id") or None,
        tenant=data.get("tenant") or None,
        priority=data.get("priority"),
        older_than_minutes=data.get("older_than"),
    )
    kept = {k: query.get(k) for k in ShipmentFilterForm.base_fields if query.get(k) not in (None, "")}
    return filters, urlencode(kept)


QUEUES = (DEFAULT_QUEUE, SPILLOVER_QUEUE, CALLBACK_QUEUE)


def _tabs(service: ShipmentQueue, queue: str) -> dict:
    """The tabs' figures: each list of this queue, and the other queues (live, spillover,
    the callbacks' events, the named queues) beside them. A COUNT query each, stopping at
    its cap: six without named queues."""
    named = [each.queue_id for each in NamedQueues(service.db).current() if each.queue_id not in QUEUES]
    return {
        "counts": service.counts(queue),
        "other_queues": [(other, service.count_queued(other)) for other in (*QUEUES, *named) if other != queue],
        "views": {k: v[0] for k, v in LISTS.items()},
    }


def _list_context(query) -> dict:
    """One shipment list of one queue for a query (the page's, or the one an action was
    posted from): the page of shipments in the list's order, the tabs and the filters."""
    service = ShipmentQueue()
    queue = _queue_name(query)
    view = query.get("view") or "queue"
    if view not in LISTS:
        raise InvalidRequest(f"There is no shipment list of that name; the lists are: {', '.join(LISTS)}.")
    filters, filter_query = _filters(query)
    title, lister = LISTS[view]
    cursor = query.get("cursor")
    if filters:
        page = service.list_filtered(view, queue, filters, cursor=cursor, limit=PAGE_SIZE)
    else:
        page = lister(service.listing, queue, cursor=cursor, limit=PAGE_SIZE)
    return {
        "queue": queue,
        "view": view,
        "title": title,
        "page": page,
        "cursor": cursor,
        **_tabs(service, queue),
        "filtered": bool(filters),
        "filter_query": filter_query,
        "filters": ShipmentFilterForm(query),
        "filter_form": DlqFilterForm(),
        "priorities": range(10),
    }


@require_GET
def shipment_list(request):
    context = _list_context(request.GET)
    return render(request, "queues_app/shipments.html", {**context, "here": request.get_full_path()})


def shipments_answer(request, *, text: str, tag: str, status: int, shipment_id: str):
    """The answer to an action on a shipment list: the list read again as it was showing
    (so a new priority or a touch re-sorts it and what left the list is gone), the message
    under the shipment's row or, when it left the list, above it; and the tabs' counts."""
    if request.POST.get("list", "") not in LISTS:
        return None
    query = list_filters(request).copy()
    query.setdefault("queue", _queue_name(request.POST))
    query.setdefault("view", request.POST["list"])
    context = _list_context(query)
    shown = any(item.shipment_id == shipment_id for item in context["page"].items)
    context.update(
        {
            "here": request.POST.get("next") or reverse("shipments"),
            "note": text,
            "note_tag": tag,
            "note_for": shipment_id,
            "note_shown": shown,
        }
    )
    if not shown:
        context.update(_gone(shipment_id, context["view"], context["queue"], _filters(query)[0]))
    return render(request, "queues_app/_shipments_answer.html", context, status=status)


def _gone(shipment_id: str, view: str, queue: str, filters: ShipmentFilter) -> dict:
    """Why a shipment acted on is not in the list any more: another state or queue,
    another page, or no longer there at all."""
    try:
        shipment = ShipmentQueue().get(shipment_id)
    except NotFound:
        return {"gone_text": "It no longer exists."}
    state = ShipmentState.LABELS.get(shipment.state, shipment.state).lower()
    belongs = in_list(shipment, view, queue) and filters.matches(shipment, view, filters.cutoff(now()))
    where = "on another page of this list" if belongs else "so no longer in this list"
    return {
        "gone_text": f"It is {state} now, {where}.",
        "gone_url": reverse("shipment-detail", args=[shipment_id]),
    }


@require_GET
def shipment_detail(request, shipment_id: str):
    shipment = ShipmentQueue().get(check_id("shipment", shipment_id))
    history = AuditTrail().for_target(target("shipment", shipment_id), limit=20)
    return render(
        request,
        "queues_app/shipment_detail.html",
        {
            "shipment": shipment,
            "history": history.entries,
            "here": request.get_full_path(),
            "priorities": range(10),
            # A list, not `data.items` in the template: a field named "items" would win.
            "data_fields": [(k, v, isinstance(v, (dict, list))) for k, v in sorted(shipment.data.items())],
        },
    )


def _checked(form: VersionForm) -> VersionForm:
    if not form.is_valid():
        raise InvalidRequest(form.problem())
    if form.expected_version is None:
        raise InvalidRequest(NO_VERSION)
    return form


@supervisor_action(default_back="/shipments/", row=shipments_answer)
def shipment_touch(request, shipment_id: str):
    done = operations(request).touch(check_id("shipment", shipment_id), expected_version=seen_version(request))
    return repeat_or_done(
        done.replayed,
        f"Shipment {shipment_id} moved to the back of its priority.",
        f"Shipment {shipment_id} was moved to the back already.",
    )


@supervisor_action(default_back="/shipments/", row=shipments_answer)
def shipment_priority(request, shipment_id: str):
    form = PriorityForm(request.POST)
    if not form.is_valid():
        if "priority" in form.errors:
            raise InvalidRequest("Priority must be a whole number from 0 to 9.")
        raise InvalidRequest(form.problem())
    _checked(form)
    done = operations(request).set_priority(
        check_id("shipment", shipment_id), form.cleaned_data["priority"], expected_version=form.expected_version
    )
    return repeat_or_done(
        done.replayed,
        f"Shipment {shipment_id} now has priority {done.item.priority}.",
        f"Shipment {shipment_id} was given priority {done.item.priority} already.",
    )


@supervisor_action(default_back="/shipments/", row=shipments_answer)
def shipment_restore(request, shipment_id: str):
    done = operations(request).restore(check_id("shipment", shipment_id), expected_version=seen_version(request))
    return repeat_or_done(
        done.replayed,
        f"Shipment {shipment_id} restored from the DLQ to the back of its queue.",
        f"Shipment {shipment_id} was restored already.",
    )


@supervisor_action(default_back="/shipments/", row=shipments_answer)
def shipment_dlq(request, shipment_id: str):
    check_id("shipment", shipment_id)
    data = request.POST.copy()
    if not (data.get("reason") or "").strip():
        data["reason"] = DEFAULT_DLQ_REASON
    form = ReasonForm(data)
    if not form.is_valid():
        if "reason" in form.errors:
            problem = inputs.text_problem(data["reason"])
            raise InvalidRequest(f"The reason {problem}." if problem else "Give a reason of at most 300 characters.")
        raise InvalidRequest(form.problem())
    version = _checked(form).expected_version
    if not confirmed(request):
        return ask_first(
            request,
            title="Send to the DLQ",
            question=f"Send shipment {shipment_id} to the dead-letter queue?",
            url=reverse("shipment-dlq", args=[shipment_id]),
            back=back_url(request, reverse("shipments")),
            fields=[("version", str(version))],
            reason=form.cleaned_data["reason"],
        )
    done = operations(request).send_to_dlq(shipment_id, form.cleaned_data["reason"], expected_version=version)
    return repeat_or_done(
        done.replayed, f"Shipment {shipment_id} is in the DLQ.", f"Shipment {shipment_id} was sent to the DLQ already."
    )


@supervisor_action(default_back="/shipments/", row=shipments_answer)
def shipment_remove(request, shipment_id: str):
    check_id("shipment", shipment_id)
    version = seen_version(request)
    if not confirmed(request):
        return ask_first(
            request,
            title="Remove shipment",
            question=f"Remove shipment {shipment_id} from its queue? It stays readable but will not be shipped.",
            url=reverse("shipment-remove", args=[shipment_id]),
            back=back_url(request, reverse("shipments")),
            fields=[("version", str(version))],
        )
    done = operations(request).remove(shipment_id, expected_version=version)
    return repeat_or_done(
        done.replayed,
        f"Shipment {shipment_id} removed from the queue.",
        f"Shipment {shipment_id} was removed from the queue already.",
    )


@supervisor_action(default_back="/shipments/?view=dlq")
def shipment_bulk(request):
    """Restore, touch or send to the DLQ a selection of shipments (after a confirmation
    that says what it would do to each, from the shipments as they are now)."""
    action = request.POST.get("action", "")
    labels = {"restore": "Restore from the DLQ", "touch": "Send to the back", "dlq": "Send to the DLQ"}
    if action not in labels:
        raise InvalidRequest("Choose what to do with the selected shipments.")
    ops = operations(request)
    return bulk(
        request,
        label=labels[action],
        kind="shipment",
        effect=lambda selection: ops.shipments_effect(action, selection),
        act=lambda selection: ops.on_shipments(action, selection, DEFAULT_DLQ_REASON),
        url=reverse("shipment-bulk"),
        back=reverse("shipments"),
        danger=action == "dlq",
    )


@supervisor_action(default_back="/shipments/?view=dlq")
def shipment_restore_matching(request):
    """Restore the DLQ shipments that match a filter: first say how many, then do it."""
    form = DlqFilterForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest(errors_in(form, "Check the filter: "))
    queue = _queue_name(request.POST)
    reason = form.cleaned_data.get("reason_contains") or None
    minutes = form.cleaned_data.get("older_than_minutes")
    if request.POST.get("confirmed") != "1":
        matches = ShipmentQueue().dlq_matching(
            queue,
            reason_contains=reason,
            older_than_seconds=minutes * 60 if minutes else None,
            limit=FILTER_RESTORE_LIMIT + 1,
        )
        ids = [f"{s.shipment_id}/{s.version}" for s in matches[:FILTER_RESTORE_LIMIT]]
        more = len(matches) > FILTER_RESTORE_LIMIT
        described = (
            " and ".join(
                filter(
                    None,
                    [
                        f"reason contains “{reason}”" if reason else "",
                        f"in the DLQ for at least {minutes:g} min" if minutes else "",
                    ],
                )
            )
            or "every shipment"
        )
        question = f"Restore {len(ids)} shipment{'s' if len(ids) != 1 else ''} from the DLQ ({described})?"
        if more:
            question += (
                f" Only the first {FILTER_RESTORE_LIMIT} are restored from here; "
                "use `python manage.py restore_shipments` for more."
            )
        if not ids:
            raise InvalidRequest(f"No shipment in the DLQ matches ({described}).")
        return confirm(
            request,
            title="Restore from the DLQ",
            count=len(ids),
            question=question,
            action_url=reverse("shipment-bulk"),
            back=back_url(request, reverse("shipments") + "?view=dlq"),
            fields=[("action", "restore"), *(("ids", i) for i in ids)],
            danger=False,
        )
    raise InvalidRequest("Confirm the selection first.")
