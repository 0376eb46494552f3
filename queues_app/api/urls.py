"""The JSON API under /api/ (token authentication; see queues_app.api.auth)."""

from django.urls import path, re_path

from queues_app.api import auth as api_auth
from queues_app.api import views as api

urlpatterns = [
    path("calls", api.create_call, name="api-calls"),
    path("calls/<str:call_id>", api.call_detail, name="api-call"),
    path("agents/<str:agent_id>/available", api.agent_available, name="api-agent-available"),
    path("agents/<str:agent_id>/release", api.agent_release, name="api-agent-release"),
    path("agents/<str:agent_id>/offline", api.agent_offline, name="api-agent-offline"),
    path("queues", api.queues, name="api-queues"),
    path("shipments", api.create_shipment, name="api-shipments"),
    path("shipments/<str:shipment_id>", api.shipment_detail, name="api-shipment"),
    # Anything else under /api/ is a JSON 404, not the HTML page.
    re_path(r"^(?P<path>.*)$", api_auth.not_found, name="api-not-found"),
]
