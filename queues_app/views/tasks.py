"""Tasks (LIFO): pending newest first, taken, finished, and what was shed."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.ddb.errors import InvalidRequest
from queues_app.tasks.queue import TaskQueue, TaskStatus

VIEWS = {
    TaskStatus.PENDING: "Pending (newest first)",
    TaskStatus.TAKEN: "Taken",
    TaskStatus.SUCCESS: "Succeeded",
    TaskStatus.FAILURE: "Failed",
}


@require_GET
def task_list(request):
    tasks = TaskQueue()
    view = (request.GET.get("view") or TaskStatus.PENDING).upper()
    if view not in VIEWS:
        raise InvalidRequest(f"There is no task list of that name; the lists are: {', '.join(VIEWS)}.")
    page = tasks.list(view, cursor=request.GET.get("cursor"), limit=25)
    counts = {status: tasks.count(status) for status in VIEWS}
    shed = [row for row in tasks.shed_history(minutes=60) if row["shed"]]
    return render(
        request,
        "queues_app/tasks.html",
        {
            "view": view,
            "views": VIEWS,
            "page": page,
            "counts": counts,
            "shed": list(reversed(shed)),
            "shed_total": sum(r["shed"] for r in shed),
            "expiry": tasks.expiry,
        },
    )
