"""The login page, and the single sign-on's steps (mozilla-django-oidc's views), which
answer 404 unless single sign-on is configured (queues_app/http/logins.py)."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import Http404
from mozilla_django_oidc import views as oidc

from queues_app.http.logins import single_sign_on


class LoginView(auth_views.LoginView):
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return {
            **super().get_context_data(**kwargs),
            "local_login": settings.LOCAL_LOGIN,
            "single_sign_on": single_sign_on(),
            "provider_name": settings.OIDC_PROVIDER_NAME,
        }


def _when_configured(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not single_sign_on():
            raise Http404("Single sign-on is not configured.")
        return view(request, *args, **kwargs)

    return login_not_required(wrapper)


start = _when_configured(oidc.OIDCAuthenticationRequestView.as_view())
callback = _when_configured(oidc.OIDCAuthenticationCallbackView.as_view())
_provider_logout = oidc.OIDCLogoutView.as_view()
_local_logout = auth_views.LogoutView.as_view()


@login_not_required
def logout(request):
    """Log out here, and at the provider too for someone who came through it."""
    return (_provider_logout if single_sign_on() else _local_logout)(request)
