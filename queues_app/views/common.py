"""What every page view shares: who acts, how an action answers, how errors reach the page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from queues_app.agents.skills import SkillError
from queues_app.ddb.errors import DynamoError, InvalidRequest, NotFound
from queues_app.forms import MAX_SELECTED, VersionForm, selected
from queues_app.http.errors import describe
from queues_app.http.roles import supervisor_required
from queues_app.inputs import is_item_id
from queues_app.operations import Operations
from queues_app.operations.bulk import BulkReport, Effect, Seen

CHANGED_EVENT = "queues-changed"  # panels listen for it and refresh themselves


def operations(request, source: str = "page") -> Operations:
    return Operations.for_request(request, source)


@dataclass
class Told:
    """An action's answer with its level: what a view returns when the change was not a
    plain success, such as a repeat that changed nothing (a warning)."""

    text: str
    level: int = messages.SUCCESS

    @property
    def tag(self) -> str:
        return messages.DEFAULT_TAGS.get(self.level, "info")


def repeat_or_done(replayed: bool, done: str, repeat: str) -> str | Told:
    """The message of a change, or of the same change found made already (by a form sent
    twice, or another tab that showed the same): nothing happened this time."""
    return Told(f"{repeat} Nothing changed.", messages.WARNING) if replayed else done


NO_VERSION = "This page did not say which version of the item you saw; reload the page and try again."


def seen_version(request) -> int:
    """The version of the item the page showed (every action on one item sends it): the
    change is made only from that version."""
    form = VersionForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest(form.problem())
    if form.expected_version is None:
        raise InvalidRequest(NO_VERSION)
    return form.expected_version


def confirmed(request) -> bool:
    """The person confirmed (the page's dialog, or the confirmation page without scripts)."""
    return request.POST.get("confirmed") == "1"


MAX_NEXT_LENGTH = 2000


def is_safe_next(request, target: object) -> bool:
    """True when `target` may be followed or shown as a link: a URL on this site (no
    other host, no `javascript:` or other scheme), of a sane length."""
    return (
        isinstance(target, str)
        and 0 < len(target) <= MAX_NEXT_LENGTH
        # A path, or a full URL (then of this host): never a relative link or a view name.
        and target.startswith(("/", "http://", "https://"))
        and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    )


def back_url(request, default: str) -> str:
    """Where to go after an action, or back to from a confirmation: the `next` the form
    (or the link) sent, if it is on this site; `default` otherwise."""
    for target in (request.POST.get("next"), request.GET.get("next")):
        if target and is_safe_next(request, target):
            return target
    return default


def flash(
    request, text: str, *, level: int = messages.SUCCESS, status: int = 200, back: str, changed: bool = False
) -> HttpResponse:
    """An action's answer: for htmx, a message fragment (and the event that refreshes
    other panels); without JavaScript, the message on the next page and a redirect."""
    if request.htmx:
        tag = messages.DEFAULT_TAGS.get(level, "info")
        response = render(request, "queues_app/_flash.html", {"text": text, "tag": tag}, status=status)
        if changed:
            trigger_client_event(response, CHANGED_EVENT)
        return response
    messages.add_message(request, level, text)
    return HttpResponseRedirect(back)  # a URL, never taken for a view's name


def problem_text(exc: DynamoError | SkillError) -> tuple[str, int]:
    problem = describe(exc)
    text = f"{problem.title}: {problem.message}"
    if problem.hint:
        text += f" {problem.hint}"
    return text, problem.status


def save_form(form, action):
    """Run `action()` for a valid form and return its result; on a domain error, put the
    message on the form (a SkillError on the field it names) and return None."""
    try:
        return action()
    except SkillError as exc:
        form.add_error(form.field_for(exc.field), exc.message)
    except DynamoError as exc:
        form.add_error(None, problem_text(exc)[0])
    return None


# Draws one row of a list as it is now, with a message in it: (request, text, tag, status,
# **the view's URL arguments) -> the response, or None when the row cannot be drawn.
RowAnswer = Callable[..., HttpResponse | None]


def supervisor_action(default_back: str, row: RowAnswer | None = None):
    """A POST-only view for supervisors. The view returns a message (the change worked)
    or a response of its own; a domain error becomes an error message on the page.

    With `row`, an htmx post from a list (a `list` field says which) is answered with
    that row redrawn as it is now, the message in it, and the list's counts out of band;
    when the row cannot be read either (DynamoDB unreachable), the message goes to the
    page's messages instead. Plain posts redirect with the message as always."""

    def decorate(view):
        @require_POST
        @supervisor_required
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            back = back_url(request, default_back)
            in_row = row is not None and bool(request.htmx) and bool(request.POST.get("list"))
            try:
                result = view(request, *args, **kwargs)
            except (DynamoError, SkillError) as exc:
                text, status = problem_text(exc)
                answer = _row(row, request, text, "error", status, kwargs) if in_row else None
                return answer or _to_messages(flash(request, text, level=messages.ERROR, status=status, back=back))
            if isinstance(result, HttpResponse):
                return result
            told = result if isinstance(result, Told) else Told(result)
            answer = _row(row, request, told.text, told.tag, 200, kwargs) if in_row else None
            if answer is not None:
                trigger_client_event(answer, CHANGED_EVENT)
                return answer
            response = flash(request, told.text, level=told.level, back=back, changed=True)
            return _to_messages(response) if in_row else response

        return wrapper

    return decorate


def _row(row: RowAnswer | None, request, text: str, tag: str, status: int, kwargs: dict) -> HttpResponse | None:
    try:
        return row(request, text=text, tag=tag, status=status, **kwargs) if row else None
    except DynamoError:
        return None


def _to_messages(response: HttpResponse) -> HttpResponse:
    """An htmx answer meant for a row that carries only a message: put it with the page's
    messages instead of in place of the row."""
    if response.status_code != 302:
        response["HX-Retarget"] = "#messages"
        response["HX-Reswap"] = "afterbegin"
    return response


def list_filters(request) -> QueryDict:
    """The query of the list page an action was posted from (its `next`): the filters the
    redrawn row is checked against."""
    target = request.POST.get("next") or ""
    return QueryDict(urlsplit(target).query if is_safe_next(request, target) else "")


def confirm(
    request,
    *,
    title: str,
    question: str,
    count: int,
    action_url: str,
    back: str,
    fields: list[tuple[str, str]],
    danger: bool = True,
    reason: str = "",
) -> HttpResponse:
    """The confirmation step of a destructive or bulk action: says how many items it
    will touch and posts the same fields again with `confirmed=1`. `back` (the Cancel
    link, and where the action returns) is checked again: only a URL on this site. With
    `reason`, the reason it will be given is shown to edit."""
    if not is_safe_next(request, back):
        back = "/"
    return render(
        request,
        "queues_app/confirm.html",
        {
            "title": title,
            "question": question,
            "count": count,
            "action_url": action_url,
            "back": back,
            "fields": fields,
            "danger": danger,
            "reason": reason,
        },
    )


def selected_ids(request, limit: int = MAX_SELECTED) -> list[str]:
    """The ids ticked on a list, each once; InvalidRequest when one cannot be an id or
    there are more than `limit` (an action says how many it touches: it never drops any)."""
    ids = list(dict.fromkeys(i for i in request.POST.getlist("ids") if i))
    if len(ids) > limit:
        raise InvalidRequest(f"Select at most {limit} items at a time (you sent {len(ids)}).")
    if not all(is_item_id(i) for i in ids):
        raise InvalidRequest("The selection holds something that is not an id; reload the page and select again.")
    return ids


def ask_first(request, *, title: str, question: str, url: str, back: str, fields: list, reason: str = ""):
    """The confirmation page of an action on one item (the page's dialog asks first where
    scripts run; this is the same question without them)."""
    return confirm(
        request, title=title, count=1, question=question, action_url=url, back=back, fields=fields, reason=reason
    )


def bulk(
    request,
    *,
    label: str,
    kind: str,
    effect: Callable[[list[Seen]], Effect],
    act: Callable[[list[Seen]], BulkReport],
    url: str,
    back: str,
    danger: bool,
    question_titled: bool = True,
) -> HttpResponse | str:
    """A bulk action on a selection of items, each as the list showed it: first what it
    would do to each (from the items as they are now), then, confirmed, what it did."""
    selection = selected_items(request)
    if not selection:
        raise InvalidRequest(f"Select at least one {kind} first.")
    back = back_url(request, back)
    if not confirmed(request):
        would = effect(selection)
        if not would.acting:
            return flash(request, f"{label}: {would.question}.", level=messages.WARNING, back=back)
        return confirm(
            request,
            title=label,
            count=len(would.acting),
            question=f"{label}: {would.question}?" if question_titled else f"{would.question}?",
            action_url=url,
            back=back,
            fields=[("action", request.POST.get("action", "")), *(("ids", seen.token) for seen in selection)],
            danger=danger,
        )
    return f"{label}: {act(selection).summary}."


def selected_items(request, limit: int = MAX_SELECTED) -> list[Seen]:
    """The items ticked on a list, each as it was shown (`<id>/<version>[/<call id>]`),
    each once; InvalidRequest as `selected_ids` does, and for a selection from a page that
    does not say which version of each item it showed (`forms.selected`)."""
    return selected(request.POST.getlist("ids"), limit)


def capped(count: int, more: bool) -> str:
    """A count that stopped at its cap reads "1,000+"."""
    return f"{count:,}+" if more else f"{count:,}"


def check_id(kind: str, item_id: str) -> str:
    """An id from the URL: NotFound (a 404 message) for one no item can have."""
    if not is_item_id(item_id):
        raise NotFound(f"No {kind} has that id.")
    return item_id
