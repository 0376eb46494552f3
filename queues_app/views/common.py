"""What every page view shares: who acts, how an action answers, how errors reach the page."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from queues_app.actions import Operations
from queues_app.agents.skills import SkillError
from queues_app.ddb.errors import DynamoError
from queues_app.http_errors import describe
from queues_app.roles import supervisor_required

CHANGED_EVENT = "queues-changed"  # panels listen for it and refresh themselves


def operations(request, source: str = "page") -> Operations:
    return Operations.for_request(request, source)


def back_url(request, default: str) -> str:
    """Where to go after an action: the `next` the form sent, if it is on this site."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
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
    return redirect(back)


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


def supervisor_action(default_back: str):
    """A POST-only view for supervisors. The view returns a message (the change worked)
    or a response of its own; a domain error becomes an error message on the page."""

    def decorate(view):
        @require_POST
        @supervisor_required
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            back = back_url(request, default_back)
            try:
                result = view(request, *args, **kwargs)
            except (DynamoError, SkillError) as exc:
                text, status = problem_text(exc)
                return flash(request, text, level=messages.ERROR, status=status, back=back)
            if isinstance(result, HttpResponse):
                return result
            return flash(request, result, back=back, changed=True)

        return wrapper

    return decorate


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
) -> HttpResponse:
    """The confirmation step of a destructive or bulk action: says how many items it
    will touch and posts the same fields again with `confirmed=1`."""
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
        },
    )


def selected_ids(request, limit: int = 500) -> list[str]:
    return list(dict.fromkeys(i for i in request.POST.getlist("ids") if i))[:limit]
