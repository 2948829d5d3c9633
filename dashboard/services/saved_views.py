"""Saved views of the runs list: save a filter under a name, pin it in the navigation, share it,
rename or delete it. Only the owner changes a view; a shared one is listed for everyone who may
see runs. The query kept is the runs list's own (``status``, ``workflow``, ``trigger``, ``q``,
dates, the cost and token amounts, sort), anything else dropped, so a saved view can never
carry a cursor or a stray parameter; an amount that does not read is refused."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.http import QueryDict

from dashboard.access import audit, authz
from dashboard.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from dashboard.core.types import Actor, is_user
from dashboard.models import SavedView
from dashboard.services import amounts, validation

__all__ = ["VIEW_KEYS", "clean_query", "saved_view_delete", "saved_view_save", "saved_views_for"]

# The runs list's filter parameters, in the order a saved query keeps them.
VIEW_KEYS = (
    "q",
    "status",
    "workflow",
    "trigger",
    "created_from",
    "created_to",
    "cost_min",
    "cost_max",
    "tokens_min",
    "sort",
)
_AMOUNTS = {
    "cost_min": amounts.read_cost,
    "cost_max": amounts.read_cost,
    "tokens_min": amounts.read_tokens,
}
MAX_NAME = 80
MAX_VIEWS = 100


def clean_query(query: str) -> str:
    """Only the runs list's filter parameters of ``query``, checked and bounded."""
    given = QueryDict(query[:4000])
    kept = QueryDict(mutable=True)
    errors: dict[str, str] = {}
    for key in VIEW_KEYS:
        value = given.get(key, "").strip()
        if value:
            validation.require_storable(value, field=key)
            if key in _AMOUNTS:
                _AMOUNTS[key](value, key, errors)
            kept[key] = value[:200]
    if errors:
        raise InvalidInput(" ".join(errors.values()), errors=errors)
    return kept.urlencode()


def saved_views_for(user: Actor) -> QuerySet[SavedView]:
    """The views ``user`` may open: their own and the shared ones, pinned first."""
    if not is_user(user) or not authz.can(user, "view"):
        return SavedView.objects.none()
    return (
        SavedView.objects.filter(Q(owner=user) | Q(shared=True))
        .select_related("owner")
        .order_by("-pinned", "name")
    )


def saved_view_save(
    *,
    user: Actor,
    name: str,
    query: str,
    pinned: bool = False,
    shared: bool = False,
    view_id: int | None = None,
) -> SavedView:
    """Create a view, or (``view_id``) change one's name, query, pin or sharing."""
    who = authz.require(user, "view", target=f"saved view {name[:80]}")
    if who is None:
        raise InvalidInput("a view belongs to a person", errors={"user": "required"})
    validation.require_storable(name, field="name")
    name = " ".join(name.split())
    if not name:
        raise InvalidInput("a view needs a name", errors={"name": "required"})
    if len(name) > MAX_NAME:
        raise InvalidInput(f"a name is at most {MAX_NAME} characters", errors={"name": "too long"})
    cleaned = clean_query(query)
    try:
        with transaction.atomic():
            if view_id is None:
                if SavedView.objects.filter(owner=who).count() >= MAX_VIEWS:
                    raise Conflict(f"you have {MAX_VIEWS} saved views already; delete one first")
                view = SavedView.objects.create(
                    owner=who, name=name, query=cleaned, pinned=pinned, shared=shared
                )
            else:
                view = _own(who, view_id)
                view.name, view.query, view.pinned, view.shared = name, cleaned, pinned, shared
                view.save()
            audit.record(
                who,
                "view_save",
                target=f"saved view {view.pk}",
                details={"name": name, "query": cleaned, "pinned": pinned, "shared": shared},
            )
    except IntegrityError:
        raise Conflict(f"you already have a view named {name!r}") from None
    return view


def saved_view_delete(*, user: Actor, view_id: int) -> None:
    who = authz.require(user, "view", target=f"saved view {view_id}")
    if who is None:
        raise InvalidInput("a view belongs to a person", errors={"user": "required"})
    with transaction.atomic():
        view = _own(who, view_id)
        audit.record(
            who, "view_delete", target=f"saved view {view.pk}", details={"name": view.name}
        )
        view.delete()


def _own(user: Actor, view_id: int) -> SavedView:
    view = SavedView.objects.select_for_update().filter(pk=view_id).first()
    if view is None or (view.owner_id != getattr(user, "pk", None) and not view.shared):
        raise NotFound(f"no saved view {view_id}")
    if view.owner_id != getattr(user, "pk", None):
        raise Forbidden("only its owner changes a shared view")
    return view
