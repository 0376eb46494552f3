"""Pages need login; viewers cannot act; htmx POSTs carry CSRF; DynamoDB trouble is a 503 page."""

import pytest
from django.test import Client
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.ddb.local import free_port


def test_pages_need_login(client, moto_db):
    for name in ("home", "system"):
        response = client.get(reverse(name))
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_login_page_is_public(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"Log in to Switchboard" in response.content


def test_agent_list_escapes_names(supervisor_client, moto_db):
    Agents().create("<script>alert(1)</script>", {"language": ["English"], "gender": ["F"]})
    response = supervisor_client.get(reverse("agents"))
    assert response.status_code == 200
    assert b"<script>alert(1)</script>" not in response.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content


def test_base_template_serves_vendored_htmx_and_sends_csrf_header(supervisor_client, moto_db):
    html = supervisor_client.get(reverse("system")).content.decode()
    assert "/static/vendor/htmx-2.0.11.min.js" in html
    assert 'hx-headers=\'{"x-csrftoken": "' in html


def test_system_page_shows_tables(supervisor_client, moto_db):
    html = supervisor_client.get(reverse("system")).content.decode()
    assert "test-callcenter" in html
    assert "Check with htmx" in html


def test_htmx_post_without_csrf_token_is_refused(supervisor, moto_db):
    client = Client(enforce_csrf_checks=True)
    client.force_login(supervisor)
    response = client.post(reverse("system-htmx-check"), HTTP_HX_REQUEST="true")
    assert response.status_code == 403


def test_htmx_post_with_csrf_header_is_accepted(supervisor, moto_db):
    client = Client(enforce_csrf_checks=True)
    client.force_login(supervisor)
    client.get(reverse("system"))  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.post(reverse("system-htmx-check"), HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200
    assert b"htmx POST accepted with its CSRF token" in response.content


def test_plain_form_post_redirects_with_a_message(supervisor_client, moto_db):
    response = supervisor_client.post(reverse("system-htmx-check"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("system")
    assert b"POST accepted with its CSRF token" in response.content


def test_viewer_sees_no_action_button_and_gets_403_on_post(viewer_client, moto_db):
    html = viewer_client.get(reverse("system")).content.decode()
    assert "Check with htmx" not in html
    assert viewer_client.post(reverse("system-htmx-check")).status_code == 403


def test_missing_table_is_a_503_page_with_the_fix(supervisor_client, moto_empty):
    response = supervisor_client.get(reverse("home"))
    assert response.status_code == 503
    html = response.content.decode()
    assert "DynamoDB table missing" in html
    assert "test-callcenter" in html
    assert "python manage.py dynamo_tables create" in html
    assert "Traceback" not in html


def test_unreachable_dynamodb_is_a_503_page_that_does_not_name_the_endpoint(supervisor_client, settings):
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    response = supervisor_client.get(reverse("home"))
    assert response.status_code == 503
    html = response.content.decode()
    assert "DynamoDB unavailable" in html
    assert settings.DYNAMODB_ENDPOINT_URL not in html  # logged with the trace id, not shown
    assert response["Retry-After"]


def test_unreachable_dynamodb_on_json_request_is_json(supervisor_client, settings):
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    response = supervisor_client.get(reverse("home"), HTTP_ACCEPT="application/json")
    assert response.status_code == 503
    assert response.json()["error"] == "DynamoDB unavailable"


@pytest.mark.parametrize("who, expected", [("staff", 200), ("supervisor", 302)])
def test_admin_is_for_staff_only(client, request, who, expected):
    client.force_login(request.getfixturevalue(who))
    assert client.get("/admin/").status_code == expected


def test_an_htmx_request_after_the_session_ended_is_sent_to_the_login_page(client, moto_db):
    response = client.get(
        reverse("home"),
        {"panel": "calls"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/agents/?status=queued",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=%2Fagents%2F%3Fstatus%3Dqueued"
    assert b"Log in" not in response.content  # nothing to swap into the panel


def _after_the_session_ended(client, moto_db, **headers):
    """A supervisor's tab from before their session ended makes Ada available."""
    ada = Agents().create("Ada", {"language": ["French"], "gender": ["F"]})
    response = client.post(reverse("agent-available", args=[ada.agent_id]), {"confirmed": "1"}, **headers)
    assert Agents().get(ada.agent_id).status == "offline"  # not done
    return response


def test_an_htmx_action_after_the_session_ended_says_it_was_not_done(client, moto_db):
    response = _after_the_session_ended(
        client, moto_db, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/agents/?status=offline"
    )
    assert response["HX-Redirect"] == "/login/?next=%2Fagents%2F%3Fstatus%3Doffline"
    page = client.get(response["HX-Redirect"]).content.decode()
    assert "Your session had ended, so what you asked for was not done: log in, then do it again." in page


@pytest.mark.parametrize(
    "referer, back",
    [
        ("http://testserver/agents/?status=offline", "/agents/?status=offline"),
        ("https://elsewhere.example/agents/", "/"),  # not this site's page: home
        (None, "/"),
    ],
)
def test_a_form_sent_after_the_session_ended_comes_back_to_its_page_not_the_action(
    client, moto_db, staff, referer, back
):
    """Without JavaScript: the login page says it was not done, and logging in leads back
    to the page the form was on, never to GET the POST-only action (a 405)."""
    headers = {"HTTP_REFERER": referer} if referer else {}
    response = _after_the_session_ended(client, moto_db, **headers)
    assert response.status_code == 302
    login = response["Location"]
    page = client.get(login).content.decode()
    assert "what you asked for was not done" in page
    assert f'name="next" value="{back}"' in page
    client.force_login(staff)
    assert client.get(login)["Location"] == back
