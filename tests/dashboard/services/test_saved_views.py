"""Saved views: a runs-list filter under a name, pinned in the navigation, shared by link;
only its owner changes it; only the list's own parameters are kept."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import services
from dashboard.models import AuditEntry, SavedView
from dashboard.services import saved_views

pytestmark = pytest.mark.django_db


@pytest.fixture
def ana(client_as: Callable[..., Client]) -> Client:
    return client_as("Operator", username="ana")


def test_a_filter_is_saved_pinned_and_opens_the_list_with_it(ana: Client) -> None:
    form = ana.get("/views/?status=failed&workflow=squares&after=abc&evil=1")
    assert 'value="status=failed&amp;workflow=squares"' in form.content.decode()

    saved = ana.post(
        "/views/",
        {
            "name": "Failed squares",
            "query": "status=failed&workflow=squares&after=x",
            "pinned": "1",
        },
    )
    assert saved.status_code == 302 and saved["Location"] == "/?status=failed&workflow=squares"
    view = SavedView.objects.get()
    assert (view.name, view.query, view.pinned, view.shared) == (
        "Failed squares",
        "status=failed&workflow=squares",
        True,
        False,
    )

    page = ana.get("/").content.decode()
    assert f'href="/views/{view.pk}/"' in page and "Failed squares" in page  # pinned in the nav
    opened = ana.get(f"/views/{view.pk}/")
    assert opened.status_code == 302 and opened["Location"] == "/?status=failed&workflow=squares"
    assert AuditEntry.objects.filter(action="view_save").exists()


def test_a_view_keeps_the_trigger_filter() -> None:
    assert saved_views.clean_query("trigger=schedule&status=failed&page=2") == (
        "status=failed&trigger=schedule"
    )


def test_a_shared_view_opens_for_others_who_cannot_change_it(
    ana: Client, client_as: Callable[..., Client]
) -> None:
    view = saved_views.saved_view_save(
        user=ana.user, name="Waiting", query="status=waiting", shared=True
    )  # type: ignore[attr-defined]
    private = saved_views.saved_view_save(user=ana.user, name="Mine", query="q=x")  # type: ignore[attr-defined]
    bo = client_as("Viewer", username="bo")

    assert bo.get(f"/views/{view.pk}/")["Location"] == "/?status=waiting"
    assert bo.get(f"/views/{private.pk}/").status_code == 404
    listed = bo.get("/views/").content.decode()
    assert "Waiting" in listed and "Mine" not in listed and "Unpin" not in listed
    bo.post(f"/views/{view.pk}/change/", {"delete": "1"})
    assert SavedView.objects.filter(pk=view.pk).exists()
    with pytest.raises(services.Forbidden):
        saved_views.saved_view_delete(user=bo.user, view_id=view.pk)  # type: ignore[attr-defined]


def test_pin_share_and_delete_ones_own(ana: Client) -> None:
    view = saved_views.saved_view_save(user=ana.user, name="X", query="status=failed")  # type: ignore[attr-defined]

    ana.post(f"/views/{view.pk}/change/", {"pinned": "1"})
    ana.post(f"/views/{view.pk}/change/", {"shared": "1"})
    view.refresh_from_db()
    assert view.pinned and view.shared
    ana.post(f"/views/{view.pk}/change/", {"delete": "1"})
    assert not SavedView.objects.exists()


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "needs a name"),
        ("x" * 81, "at most 80"),
        ("nul\x00", "NUL"),
        ("dup", "already have a view named"),
    ],
)
def test_bad_names_are_refused_with_a_message(ana: Client, name: str, says: str) -> None:
    saved_views.saved_view_save(user=ana.user, name="dup", query="")  # type: ignore[attr-defined]

    answer = ana.post("/views/", {"name": name, "query": "status=failed"})

    assert answer.status_code in (409, 422) and says in answer.content.decode()
    assert SavedView.objects.count() == 1


def test_an_open_saved_view_is_marked_in_the_navigation_and_named_in_the_title(
    ana: Client,
) -> None:
    view = saved_views.saved_view_save(  # type: ignore[attr-defined]
        user=ana.user, name="Failed squares", query="status=failed&workflow=squares", pinned=True
    )

    opened = ana.get("/?workflow=squares&status=failed&after=x").content.decode()
    other = ana.get("/?status=failed").content.decode()

    link = f'<a href="/views/{view.pk}/" title="Saved view: Failed squares" aria-current="page">'
    assert link in opened and "<title>Failed squares · Runs · Superstep</title>" in opened
    assert 'aria-current="page">Runs</a>' not in opened
    assert link not in other and "<title>Runs · Superstep</title>" in other
