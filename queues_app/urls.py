from django.urls import path

from queues_app.views import agents, audit, calls, overview, shipments, system, tasks, wallboard

urlpatterns = [
    path("", overview.overview, name="home"),
    path("agents/", agents.agent_list, name="agents"),
    path("agents/new", agents.agent_create, name="agent-create"),
    path("agents/bulk", agents.agent_bulk, name="agent-bulk"),
    path("agents/<str:agent_id>/", agents.agent_detail, name="agent-detail"),
    path("agents/<str:agent_id>/available", agents.agent_available, name="agent-available"),
    path("agents/<str:agent_id>/release", agents.agent_release, name="agent-release"),
    path("agents/<str:agent_id>/offline", agents.agent_offline, name="agent-offline"),
    path("calls/", calls.calls, name="calls"),
    path("calls/find", calls.call_lookup, name="call-lookup"),
    path("calls/<str:call_id>/", calls.call_detail, name="call-detail"),
    path("calls/<str:call_id>/abandon", calls.call_abandon, name="call-abandon"),
    path("calls/<str:call_id>/end", calls.call_end, name="call-end"),
    path("queues/", overview.queue_metadata, name="queues"),
    path("shipments/", shipments.shipment_list, name="shipments"),
    path("shipments/bulk", shipments.shipment_bulk, name="shipment-bulk"),
    path("shipments/restore-matching", shipments.shipment_restore_matching, name="shipment-restore-matching"),
    path("shipments/<str:shipment_id>/", shipments.shipment_detail, name="shipment-detail"),
    path("shipments/<str:shipment_id>/touch", shipments.shipment_touch, name="shipment-touch"),
    path("shipments/<str:shipment_id>/priority", shipments.shipment_priority, name="shipment-priority"),
    path("shipments/<str:shipment_id>/restore", shipments.shipment_restore, name="shipment-restore"),
    path("shipments/<str:shipment_id>/dlq", shipments.shipment_dlq, name="shipment-dlq"),
    path("shipments/<str:shipment_id>/remove", shipments.shipment_remove, name="shipment-remove"),
    path("tasks/", tasks.task_list, name="tasks"),
    path("audit/", audit.audit, name="audit"),
    path("system/", system.system, name="system"),
    path("system/htmx-check/", system.htmx_check, name="system-htmx-check"),
    path("wallboard/", wallboard.wallboard, name="wallboard"),
]
