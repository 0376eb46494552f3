from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from queues_app.api import metrics

admin.site.site_header = "Switchboard administration"
admin.site.site_title = "Switchboard admin"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("queues_app.api.urls")),
    path("metrics", metrics.prometheus, name="metrics"),
    path("favicon.ico", login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True))),
    path("", include("queues_app.urls")),
]
