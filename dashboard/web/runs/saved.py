"""Saved views of the runs list (``services.saved_views``): the list of them, saving the
current filter, pinning, sharing, deleting, and the shareable link that opens one."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from dashboard import services
from dashboard.services import saved_views
from dashboard.web.access import page_view

TEMPLATE = "dashboard/saved_views.html"


@page_view("GET", "POST")
def saved_view_list(request: HttpRequest) -> HttpResponse:
    """GET: the views, and a form to save the filter in the query string. POST: save it."""
    status = 200
    error = ""
    if request.method == "POST":
        try:
            view = saved_views.saved_view_save(
                user=request.user,
                name=request.POST.get("name", ""),
                query=request.POST.get("query", ""),
                pinned=request.POST.get("pinned") == "1",
                shared=request.POST.get("shared") == "1",
            )
        except services.ServiceError as exc:
            error, status = exc.message, (exc.status if exc.status != 400 else 422)
        else:
            messages.success(request, f"View “{view.name}” saved.")
            return redirect(f"{reverse('dashboard:run_list')}?{view.query}")
    query = request.POST.get("query", "") if request.method == "POST" else request.GET.urlencode()
    context = {
        "views": list(saved_views.saved_views_for(request.user)),
        "query": _safe_query(query),
        "name": request.POST.get("name", ""),
        "error": error,
        "nav_section": "runs",
    }
    return render(request, TEMPLATE, context, status=status)


def _safe_query(query: str) -> str:
    try:
        return saved_views.clean_query(query)
    except services.ServiceError:
        return ""


@page_view("GET")
def saved_view_open(request: HttpRequest, view_id: int) -> HttpResponse:
    """The shareable link: the runs list with the view's filter."""
    view = saved_views.saved_views_for(request.user).filter(pk=view_id).first()
    if view is None:
        raise Http404("No such saved view.")
    return redirect(f"{reverse('dashboard:run_list')}?{view.query}")


@page_view("POST")
def saved_view_change(request: HttpRequest, view_id: int) -> HttpResponse:
    """Pin or unpin, share or stop sharing, or (``delete``) remove one of one's views."""
    back = reverse("dashboard:saved_views")
    try:
        if request.POST.get("delete") == "1":
            saved_views.saved_view_delete(user=request.user, view_id=view_id)
            messages.success(request, "View deleted.")
            return redirect(back)
        current = saved_views.saved_views_for(request.user).filter(pk=view_id).first()
        if current is None:
            raise Http404("No such saved view.")
        saved_views.saved_view_save(
            user=request.user,
            view_id=view_id,
            name=current.name,
            query=current.query,
            pinned=request.POST.get("pinned", "1" if current.pinned else "") == "1",
            shared=request.POST.get("shared", "1" if current.shared else "") == "1",
        )
    except services.ServiceError as exc:
        messages.error(request, f"Not changed: {exc.message}.")
        return redirect(back)
    messages.success(request, "View updated.")
    return redirect(back)
