"""How views answer: the whole page, or to htmx only the fragment the page includes (with the
pending messages swapped in out of band); redirects that htmx follows too."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django_htmx.http import HttpResponseClientRedirect

from memoryapp.models import Memory

PAGE_SIZE = 20


def nav_context(request) -> dict:
    """What the top navigation needs on every page."""
    if not (request.user.is_authenticated and request.user.is_org_admin):
        return {}
    waiting = Memory.objects.filter(organization_id=request.user.organization_id, status=Memory.Status.QUARANTINED)
    return {"nav_quarantine_count": waiting.count()}


def fragment(request, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    """The fragment, plus the pending messages swapped into the page's message area (only when
    there are some, so a polling fragment does not wipe a message the user has not read yet)."""
    response = render(request, template, context, status=status)
    if len(messages.get_messages(request)):
        response.content += render_to_string("web/_messages.html", {"oob": True}, request=request).encode()
    return response


def page_or_fragment(request, page: str, partial: str, context: dict, *, status: int = 200) -> HttpResponse:
    """`partial` to htmx (the page template includes it), else the whole `page`."""
    if request.htmx and not request.htmx.boosted:
        return fragment(request, partial, context, status=status)
    return render(request, page, {**nav_context(request), **context}, status=status)


def redirect_after_action(request, to, *args, **kwargs) -> HttpResponse:
    """After a POST: a plain redirect, or for htmx a client-side one (HX-Redirect)."""
    response = redirect(to, *args, **kwargs)
    if request.htmx:
        return HttpResponseClientRedirect(response.url)
    return response


def paginate(request, rows, *, per_page: int = PAGE_SIZE) -> Page:
    if isinstance(rows, QuerySet):
        ordering = [*(rows.query.order_by or rows.model._meta.ordering)]
        if not {"pk", "-pk", "id", "-id"} & {o for o in ordering if isinstance(o, str)}:
            # Pages by offset: rows that tie on the ordering (one timestamp) would move between pages.
            rows = rows.order_by(*ordering, "-pk")
    return Paginator(rows, per_page).get_page(request.GET.get("page"))
