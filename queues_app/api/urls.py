"""The JSON API under /api/ (token authentication; see queues_app.api.auth), its OpenAPI
document and its documentation page."""

from django.urls import path, re_path

from queues_app.api import auth as api_auth
from queues_app.api import docs
from queues_app.api.application import machine_urls

urlpatterns = [
    path("openapi.json", docs.openapi_json, name="api-openapi"),
    path("docs", docs.docs_page, name="api-docs"),
    *machine_urls(),
    # Anything else under /api/ is a JSON 404, not the HTML page.
    re_path(r"^(?P<path>.*)$", api_auth.not_found, name="api-not-found"),
]
