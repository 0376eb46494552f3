from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from queues_app.api import metrics
from queues_app.views import health, logins


class FaviconRedirect(RedirectView):
    """To the icon's static URL, found when asked (with DEBUG off it is a hashed name from
    collectstatic's manifest, which need not exist yet when the URLs are loaded)."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("favicon.svg")


admin.site.site_header = "Switchboard administration"
admin.site.site_title = "Switchboard admin"

# A request Django refuses before any view (a bad Host header) still gets the API's JSON.
handler400 = "queues_app.http.middleware.bad_request"
# The others in the site's own layout (or JSON to a program), like every other refusal.
handler403 = "queues_app.views.errors.permission_denied"
handler404 = "queues_app.views.errors.page_not_found"
handler500 = "queues_app.views.errors.server_error"

urlpatterns = [
    path("login/", logins.LoginView.as_view(), name="login"),
    path("logout/", logins.logout, name="logout"),
    # Single sign-on (404 unless configured): the names are mozilla-django-oidc's own.
    path("oidc/authenticate/", logins.start, name="oidc_authentication_init"),
    path("oidc/callback/", logins.callback, name="oidc_authentication_callback"),
    path("admin/", admin.site.urls),
    path("api/", include("queues_app.api.urls")),
    path("metrics", metrics.prometheus, name="metrics"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("favicon.ico", login_not_required(FaviconRedirect.as_view())),
    path("", include("queues_app.urls")),
]
