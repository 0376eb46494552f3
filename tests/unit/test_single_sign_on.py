"""Single sign-on against a real OpenID Connect provider the test starts on loopback
(`oidc-provider-mock`: authlib's provider, signing ID tokens with its own RSA key and
publishing it as JWKS). Django's test client is the browser; httpx is the person at the
provider's login form. Login, the role from the groups claim, refusal of someone in no
group, role changes at the provider, logout at both ends, and local passwords turned off."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.utils.html import escape
from oidc_provider_mock import User, run_server_in_thread

from queues_app.http.logins import REFUSED
from queues_app.http.roles import SUPERVISORS, VIEWERS, can_act
from tests.helpers.settings import read_setting
from tests.helpers.users import PASSWORD, make_user

PEOPLE = [
    User(sub="sam-sso", claims={"groups": ["cc-supervisors", "ops"], "email": "sam@example.com", "given_name": "Sam"}),
    User(sub="vic-sso", claims={"groups": ["cc-viewers"], "email": "vic@example.com"}),
    User(sub="max-sso", claims={"groups": ["marketing"], "email": "max@example.com"}),
]


@pytest.fixture
def provider(monkeypatch):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # the provider is on plain-HTTP loopback
    with run_server_in_thread(user_claims=PEOPLE) as server:
        yield f"http://127.0.0.1:{server.server_port}"


@pytest.fixture
def sso(settings, provider, db, moto_db):
    settings.OIDC_RP_CLIENT_ID = "switchboard"
    settings.OIDC_RP_CLIENT_SECRET = "switchboard-secret"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{provider}/oauth2/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{provider}/oauth2/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{provider}/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{provider}/jwks"
    settings.OIDC_OP_LOGOUT_ENDPOINT = f"{provider}/oauth2/end_session"
    settings.OIDC_SUPERVISOR_GROUPS = ["cc-supervisors"]
    settings.OIDC_VIEWER_GROUPS = ["cc-viewers"]
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "queues_app.http.logins.ProviderGroups"]
    return provider


def log_in_at_provider(client, sub: str):
    """The whole code flow: Switchboard sends the browser to the provider, the person picks
    their account there, the provider sends the browser back with a code."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302, start.content
    chosen = httpx.post(start["Location"], data={"sub": sub}, follow_redirects=False)
    assert chosen.status_code == 302, chosen.text
    back = urlsplit(chosen.headers["location"])
    assert back.path == "/oidc/callback/"
    return client.get(f"{back.path}?{back.query}")


def discovery(provider: str) -> dict:
    return httpx.get(f"{provider}/.well-known/openid-configuration").json()


def test_the_endpoints_are_the_providers_own(sso):
    document = discovery(sso)
    assert document["authorization_endpoint"].endswith("/oauth2/authorize")
    assert document["jwks_uri"].endswith("/jwks")


def test_a_supervisor_of_the_provider_logs_in_as_a_supervisor(sso, client):
    answer = log_in_at_provider(client, "sam-sso")

    assert answer.status_code == 302 and answer["Location"] == "/"
    assert client.get("/").status_code == 200
    user = get_user_model().objects.get(username="sam-sso")
    assert list(user.groups.values_list("name", flat=True)) == [SUPERVISORS]
    assert can_act(user) and not user.has_usable_password()
    assert (user.email, user.first_name) == ("sam@example.com", "Sam")


def test_a_viewer_of_the_provider_logs_in_as_a_viewer(sso, client):
    log_in_at_provider(client, "vic-sso")

    assert client.get("/").status_code == 200
    user = get_user_model().objects.get(username="vic-sso")
    assert list(user.groups.values_list("name", flat=True)) == [VIEWERS]
    assert not can_act(user)


def test_someone_in_no_group_is_refused_and_told_why(sso, client):
    answer = log_in_at_provider(client, "max-sso")

    assert answer.status_code == 302 and answer["Location"] == "/login/"
    assert client.get("/")["Location"].startswith("/login/")  # not logged in
    assert escape(REFUSED) in client.get("/login/").content.decode()
    assert not get_user_model().objects.filter(username="max-sso").exists()


def test_the_role_follows_the_groups_at_every_login(sso, client):
    log_in_at_provider(client, "vic-sso")
    client.logout()
    httpx.put(f"{sso}/users/vic-sso", json={"groups": ["cc-supervisors"]}).raise_for_status()

    log_in_at_provider(client, "vic-sso")
    assert list(get_user_model().objects.get(username="vic-sso").groups.values_list("name", flat=True)) == [SUPERVISORS]

    client.logout()
    httpx.put(f"{sso}/users/vic-sso", json={"groups": []}).raise_for_status()
    assert log_in_at_provider(client, "vic-sso")["Location"] == "/login/"  # removed at the provider: refused


def test_logging_out_ends_the_providers_session_too(sso, client):
    log_in_at_provider(client, "sam-sso")

    answer = client.post("/logout/")

    assert answer.status_code == 302
    leaving = urlsplit(answer["Location"])
    assert f"{leaving.scheme}://{leaving.netloc}{leaving.path}" == f"{sso}/oauth2/end_session"
    query = parse_qs(leaving.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/login/"]
    assert query["id_token_hint"][0].count(".") == 2  # the ID token the provider issued
    assert client.get("/")["Location"].startswith("/login/")
    confirmed = httpx.post(
        f"{sso}/oauth2/end_session/confirm", data={"redirect_uri": query["post_logout_redirect_uri"][0]}
    )
    assert confirmed.status_code == 302 and confirmed.headers["location"] == "http://testserver/login/"


def test_a_local_password_still_works_beside_it_and_logs_out_locally(sso, client, django_user_model):
    make_user(django_user_model, "lee", SUPERVISORS)
    page = client.get("/login/").content.decode()
    assert "Log in with your identity provider" in page and 'name="password"' in page

    assert client.post("/login/", {"username": "lee", "password": PASSWORD}).status_code == 302
    assert client.post("/logout/")["Location"] == "http://testserver/login/"


def test_with_local_login_off_only_the_provider_lets_people_in(sso, client, settings, django_user_model):
    settings.LOCAL_LOGIN = False
    make_user(django_user_model, "lee", SUPERVISORS)

    assert 'name="password"' not in client.get("/login/").content.decode()
    assert client.post("/login/", {"username": "lee", "password": PASSWORD}).status_code == 200  # refused
    assert client.get("/")["Location"].startswith("/login/")
    log_in_at_provider(client, "sam-sso")
    assert client.get("/").status_code == 200


def test_without_single_sign_on_its_pages_do_not_exist(db, client):
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    assert "identity provider" not in client.get("/login/").content.decode()


def test_settings_that_cannot_work_refuse_to_start(tmp_path):
    partial = read_setting(tmp_path, "settings.AUTHENTICATION_BACKENDS", OIDC_RP_CLIENT_ID="switchboard")
    assert partial.returncode != 0
    assert "also needs OIDC_OP_AUTHORIZATION_ENDPOINT" in partial.stderr
    assert "OIDC_SUPERVISOR_GROUPS or OIDC_VIEWER_GROUPS" in partial.stderr
    nobody = read_setting(tmp_path, "settings.LOCAL_LOGIN", LOCAL_LOGIN="false")
    assert nobody.returncode != 0 and "LOCAL_LOGIN=false needs single sign-on" in nobody.stderr
    endpoints = {
        f"OIDC_OP_{name}_ENDPOINT": f"https://login.example.com/{name.lower()}"
        for name in ("AUTHORIZATION", "TOKEN", "USER", "JWKS")
    }
    complete = read_setting(
        tmp_path,
        "settings.AUTHENTICATION_BACKENDS[-1]",
        OIDC_RP_CLIENT_ID="switchboard",
        OIDC_VIEWER_GROUPS="cc-viewers",
        **endpoints,
    )
    assert complete.stdout.strip() == "queues_app.http.logins.ProviderGroups", complete.stderr
