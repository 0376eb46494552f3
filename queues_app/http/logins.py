"""How people log in: with a local password (LOCAL_LOGIN, on by default) and, when the
OIDC_* settings name one, through the centre's OpenID Connect provider
(mozilla-django-oidc does the protocol: the code flow, the ID token's signature against
the provider's keys, the nonce and state).

The provider says who someone is and which groups they are in; the groups alone decide
the role, at every login: a member of an OIDC_SUPERVISOR_GROUPS group is a supervisor,
else of an OIDC_VIEWER_GROUPS group a viewer. Someone in neither is refused, even if
they were let in before, since the provider is where access is granted and withdrawn.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from queues_app.http.roles import SUPERVISORS, VIEWERS

log = logging.getLogger(__name__)

USERNAME_MAX = 150  # Django's username field
REFUSED = (
    "Your account at the identity provider is in no group that may use Switchboard; "
    "ask an administrator to add you to the supervisors' or the viewers' group."
)


def single_sign_on() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


class LocalPasswords(ModelBackend):
    """Django's username and password, while LOCAL_LOGIN is on."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not settings.LOCAL_LOGIN:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def role_of(claims: dict) -> str | None:
    """SUPERVISORS, VIEWERS or None, from the groups claim (a list, or one string)."""
    groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    member_of = {groups} if isinstance(groups, str) else {str(group) for group in groups}
    if member_of & set(settings.OIDC_SUPERVISOR_GROUPS):
        return SUPERVISORS
    if member_of & set(settings.OIDC_VIEWER_GROUPS):
        return VIEWERS
    return None


class ProviderGroups(OIDCAuthenticationBackend):
    """A user per provider account, named by OIDC_USERNAME_CLAIM (`sub` by default: it
    never changes nor is reused), with the role of their groups and no password."""

    def get_username(self, claims) -> str:
        return str(claims.get(settings.OIDC_USERNAME_CLAIM) or "")[:USERNAME_MAX]

    def verify_claims(self, claims) -> bool:
        if not self.get_username(claims):
            log.warning("single sign-on refused: no %s claim", settings.OIDC_USERNAME_CLAIM)
            return False
        if role_of(claims) is None:
            log.warning("single sign-on refused for %s: in no Switchboard group", self.get_username(claims))
            messages.error(self.request, REFUSED)
            return False
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(username=self.get_username(claims))

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(self.get_username(claims))  # no usable password
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        """The role and the name as the provider has them now."""
        user.email = str(claims.get("email") or "")[:254]
        user.first_name = str(claims.get("given_name") or "")[:150]
        user.last_name = str(claims.get("family_name") or "")[:150]
        user.save(update_fields=["email", "first_name", "last_name"])
        role = role_of(claims)
        user.groups.remove(*Group.objects.filter(name__in=[SUPERVISORS, VIEWERS]).exclude(name=role))
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        return user


def provider_logout_url(request) -> str:
    """Where logging out leads (OIDC_OP_LOGOUT_URL_METHOD): for someone who came through
    the provider, to its end-session endpoint, so the provider's session ends too, and back
    to the login page; for anyone else, to the login page."""
    back = request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL))
    id_token = request.session.get("oidc_id_token")
    if not (settings.OIDC_OP_LOGOUT_ENDPOINT and id_token):
        return back
    query = urlencode({"id_token_hint": id_token, "post_logout_redirect_uri": back})
    return f"{settings.OIDC_OP_LOGOUT_ENDPOINT}?{query}"
