"""Failed logins are throttled (django-axes): 5 failures for one username from one address
lock that pair out for 15 minutes on the site's login and the admin's, the right password
included; the lockout is a clear 429 page; a successful login clears the count; a
session lasts a shift."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessLog
from django.conf import settings
from django.utils import timezone

from tests.helpers.users import PASSWORD

LIMIT = 5


@pytest.fixture(autouse=True)
def throttle_as_configured():
    # The numbers these tests count with are the defaults.
    assert settings.AXES_FAILURE_LIMIT == LIMIT
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)


def site_login(client, username, password, address="10.0.0.1", **headers):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address, headers=headers)


def admin_login(client, username, password, address="10.0.0.1"):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password}, REMOTE_ADDR=address)


def logged_in(client):
    return "_auth_user_id" in client.session


def assert_locked_out(response):
    assert response.status_code == 429
    html = response.content.decode()
    assert "Too many failed logins" in html
    assert f"After {LIMIT} failed attempts" in html and "15 minutes" in html
    assert "Traceback" not in html
    assert response["Retry-After"] == str(15 * 60)


def expire_lockout(minutes=16):
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=minutes))


def test_five_wrong_passwords_then_the_right_one_is_refused_while_locked(client, supervisor):
    for attempt in range(1, LIMIT):
        response = site_login(client, supervisor.username, f"wrong-{attempt}")
        assert response.status_code == 200, attempt
        assert "didn't match" in response.content.decode()
    # The fifth failure locks the pair out ...
    assert_locked_out(site_login(client, supervisor.username, "wrong-5"))
    # ... and the right password is refused too, without a session.
    assert_locked_out(site_login(client, supervisor.username, PASSWORD))
    assert not logged_in(client)
    assert AccessAttempt.objects.get(username=supervisor.username).failures_since_start >= LIMIT

    # Trying during the lockout does not make it longer: 15 minutes after the fifth failure it is over.
    expire_lockout(minutes=15)
    response = site_login(client, supervisor.username, PASSWORD)
    assert response.status_code == 302 and logged_in(client)
    assert not AccessAttempt.objects.filter(username=supervisor.username).exists()  # cleared


def test_still_locked_a_minute_before_the_end(client, supervisor):
    for attempt in range(LIMIT):
        site_login(client, supervisor.username, f"wrong-{attempt}")
    expire_lockout(minutes=14)
    assert_locked_out(site_login(client, supervisor.username, PASSWORD))


def test_the_lock_holds_for_that_username_from_that_address_only(client, supervisor, viewer):
    for attempt in range(LIMIT):
        site_login(client, supervisor.username, f"wrong-{attempt}")
    assert_locked_out(site_login(client, supervisor.username, PASSWORD))
    # The same person from another address, another user from the same address: not locked.
    assert site_login(client, supervisor.username, PASSWORD, address="10.0.0.2").status_code == 302
    client.logout()
    assert site_login(client, viewer.username, PASSWORD).status_code == 302


def test_a_successful_login_clears_the_count(client, supervisor):
    for _ in range(3):
        for attempt in range(LIMIT - 1):
            assert site_login(client, supervisor.username, f"wrong-{attempt}").status_code == 200
        assert site_login(client, supervisor.username, PASSWORD).status_code == 302
        client.logout()
    # 12 failures in all, never 5 in a row: never locked.
    assert not AccessAttempt.objects.filter(username=supervisor.username).exists()
    assert AccessLog.objects.filter(username=supervisor.username).count() == 3  # successful logins are logged


def test_unknown_usernames_are_locked_out_alike(client, db):
    """The lockout tells nothing about which usernames exist."""
    for attempt in range(LIMIT - 1):
        assert site_login(client, "nobody-here", f"wrong-{attempt}").status_code == 200
    assert_locked_out(site_login(client, "nobody-here", "wrong"))


def test_the_admin_login_is_throttled_too(client, staff):
    for attempt in range(1, LIMIT):
        response = admin_login(client, staff.username, f"wrong-{attempt}")
        assert response.status_code == 200, attempt
        assert "Please enter the correct" in response.content.decode()
    assert_locked_out(admin_login(client, staff.username, "wrong-5"))
    assert_locked_out(admin_login(client, staff.username, PASSWORD))
    # One count for both doors: the site's login is closed to the pair as well.
    assert_locked_out(site_login(client, staff.username, PASSWORD))
    assert not logged_in(client)
    expire_lockout()
    assert admin_login(client, staff.username, PASSWORD).status_code == 302
    assert client.get("/admin/").status_code == 200


def test_a_forged_forwarded_for_does_not_get_around_the_lockout(client, supervisor):
    """Without a trusted proxy, X-Forwarded-For is the client's say and is ignored."""
    for attempt in range(LIMIT):
        site_login(client, supervisor.username, f"wrong-{attempt}", **{"X-Forwarded-For": f"192.0.2.{attempt}"})
    assert_locked_out(site_login(client, supervisor.username, PASSWORD, **{"X-Forwarded-For": "192.0.2.99"}))


def test_behind_a_trusted_proxy_the_address_it_appended_counts(client, supervisor, settings):
    settings.BEHIND_TLS_PROXY = True
    proxy = "10.9.9.9"
    for attempt in range(LIMIT):
        # What the client wrote to the left of the proxy's own entry changes nothing.
        forwarded = f"198.51.100.{attempt}, 203.0.113.7"
        site_login(client, supervisor.username, f"wrong-{attempt}", address=proxy, **{"X-Forwarded-For": forwarded})
    locked = site_login(client, supervisor.username, PASSWORD, address=proxy, **{"X-Forwarded-For": "203.0.113.7"})
    assert_locked_out(locked)
    # Another client behind the same proxy is not locked out.
    other = site_login(client, supervisor.username, PASSWORD, address=proxy, **{"X-Forwarded-For": "203.0.113.8"})
    assert other.status_code == 302


def test_a_session_lasts_twelve_hours(client, supervisor):
    assert settings.SESSION_COOKIE_AGE == 12 * 3600
    assert site_login(client, supervisor.username, PASSWORD).status_code == 302
    assert client.cookies[settings.SESSION_COOKIE_NAME]["max-age"] == 12 * 3600
    assert client.session.get_expiry_age() == 12 * 3600
