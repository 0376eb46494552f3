"""The Lines page as a supervisor uses it: the lines with how they stand, a line created
and edited from the version shown (a stale edit refused on the page), a bad value shown on
its field, and a line removed; a viewer sees and changes nothing."""

from queues_app.centre.call_center import CallCenter


def form(**fields):
    data = {
        "line_id": "support",
        "name": "Support",
        "service_level_seconds": "30",
        "service_level_target": "80",
        "short_abandon_seconds": "0",
        "hours": "",
        "holidays": "",
        "overflow_kind": "",
        "skill_language": "French",
    }
    return {**data, **fields}


def test_without_lines_the_page_shows_main_and_says_so(moto_db, supervisor_client):
    page = supervisor_client.get("/lines/").content.decode()
    assert 'data-line="main"' in page and "No line is configured" in page and "80% within 20 s" in page


def test_a_line_is_created_edited_from_its_version_and_a_stale_edit_refused(moto_db, supervisor_client):
    answer = supervisor_client.post("/lines/new", form(hours="mon 08:00-18:00\nsat 22:00-02:00"))
    assert answer.status_code == 302 and answer["Location"] == "/lines/"
    line = CallCenter().lines.get("support")
    assert line.requires == {"language": "French"} and line.hours.as_dict()["hours"]["sat"] == [["22:00", "02:00"]]
    page = supervisor_client.get("/lines/support/").content.decode()
    assert "mon 08:00-18:00" in page and "from version 1" in page
    assert supervisor_client.post("/lines/support/", form(name="Support FR", version="1")).status_code == 302
    stale = supervisor_client.post("/lines/support/", form(name="Old tab", version="1"))
    assert stale.status_code == 400 and "changed since version 1" in stale.content.decode()
    assert CallCenter().lines.get("support").name == "Support FR"
    listed = supervisor_client.get("/lines/").content.decode()
    assert "Support FR" in listed and ("Open" in listed or "Closed" in listed)


def test_a_bad_value_is_shown_on_its_field_and_nothing_is_stored(moto_db, supervisor_client):
    answer = supervisor_client.post("/lines/new", form(hours="mon 08:00-25:00"))
    assert answer.status_code == 400
    page = answer.content.decode()
    assert "has-error" in page and "25:00" in page
    answer = supervisor_client.post("/lines/new", form(max_waiting="5"))
    assert answer.status_code == 400 and "where callers go past them" in answer.content.decode()
    assert CallCenter().lines.configured() == []


def test_a_line_is_removed_from_the_version_shown(moto_db, supervisor_client):
    supervisor_client.post("/lines/new", form())
    answer = supervisor_client.post("/lines/support/delete", {"version": "1", "confirmed": "1"}, follow=True)
    assert "Removed line Support." in answer.content.decode()
    assert CallCenter().lines.configured() == []


def test_a_viewer_sees_the_lines_but_cannot_change_them(moto_db, viewer_client):
    page = viewer_client.get("/lines/").content.decode()
    assert 'data-line="main"' in page and "New line" not in page
    assert viewer_client.post("/lines/new", form()).status_code == 403
    assert CallCenter().lines.configured() == []


def test_the_calls_page_asks_for_the_line_once_there_are_several(moto_db, supervisor_client):
    page = supervisor_client.get("/calls/").content.decode()
    assert 'name="line" value="main"' in page and '<select name="line"' not in page  # one line: nothing to ask
    supervisor_client.post("/lines/new", form(line_id="general", name="General", skill_language=""))
    supervisor_client.post("/lines/new", form())
    page = supervisor_client.get("/calls/").content.decode()
    assert '<select name="line"' in page and '<option value="support"' in page
    key = page.split('name="request_key" value="', 1)[1].split('"', 1)[0]
    placed = supervisor_client.post(
        "/calls/",
        {
            "line": "support",
            "skill_language": "any",
            "skill_gender": "any",
            "priority": "0",
            "order": "fifo",
            "request_key": key,
        },
    )
    assert placed.status_code == 302
    assert CallCenter().line.on_line(["support"]) == {"support": 1}
    assert "French" in supervisor_client.get(placed["Location"]).content.decode()  # what support requires
