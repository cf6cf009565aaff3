"""End-user pages: my memories, one memory (provenance, history, reads), correct, delete with
preview and receipt, export, pause. Thin: reads in selectors.dashboard, writes in services."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url, reswap, retarget

from memoryapp.models import Agent
from memoryapp.selectors import dashboard
from memoryapp.selectors.names import user_display_name
from memoryapp.services import govern
from memoryapp.services.purge import purge_delay_minutes
from memoryapp.web.forms import (
    AgentBlockForm,
    MemoryCorrectForm,
    MemoryFilterForm,
    SwitchForm,
)
from memoryapp.web.permissions import (
    actor_of,
    episode_for_change,
    may_change,
    memory_for_change,
    memory_for_reading,
    principal_of,
    receipt_for_reading,
)
from memoryapp.web.rendering import fragment, nav_context, page_or_fragment, paginate, redirect_after_action


@login_required
@require_GET
def memory_list(request):
    data = request.GET.copy()
    data.setdefault("status", "active")  # first visit: what is believed now
    data.setdefault("kind", "facts")  # each fact once: summaries restate them, and have their own filter
    form = MemoryFilterForm(data, organization_id=request.user.organization_id, scopes=dashboard.MY_SCOPES,
                            name=user_display_name(request.user))
    listing = dashboard.memories_listing(principal_of(request), user=request.user, filters=form.filters(),
                                       scopes=dashboard.MY_SCOPES)
    context = {"form": form, "listing": listing, "page_obj": paginate(request, listing.rows),
               "agents_seen": dashboard.agents_seen(request.user),
               "filtered": any(value for key, value in request.GET.items() if key != "page")}
    return page_or_fragment(request, "web/memory_list.html", "web/_memory_results.html", context)


def _memory_context(request, memory) -> dict:
    # an admin reading someone else's memory came from the provenance browser: the menu says so
    others = request.user.is_org_admin and memory.user_id != request.user.id
    section = "admin-memories" if others else "memories"
    return {"page": dashboard.memory_page(principal_of(request), memory), "can_change": may_change(request, memory),
            "can_correct": may_change(request, memory, correcting=True), "nav_section": section}


@login_required
@require_GET
def memory_detail(request, memory_id):
    memory = memory_for_reading(request, memory_id)
    return page_or_fragment(request, "web/memory_detail.html", "web/_memory_detail.html",
                            _memory_context(request, memory))


@login_required
@require_http_methods(["GET", "POST"])
def memory_correct(request, memory_id):
    memory = memory_for_change(request, memory_id, correcting=True)
    form = MemoryCorrectForm(request.POST or None, initial={"text": memory.text})
    if request.method == "POST" and form.is_valid():
        try:
            corrected = govern.memory_correct(memory=memory, actor=actor_of(request), text=form.cleaned_data["text"])
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Saved as a new version. The old one stays in the history, marked invalidated.")
            if request.htmx:
                response = fragment(request, "web/_memory_detail.html", _memory_context(request, corrected))
                return push_url(response, reverse("web:memory", args=[corrected.pk]))
            return redirect(reverse("web:memory", args=[corrected.pk]))
    context = {"memory": memory, "form": form}
    status = 400 if form.errors else 200
    response = page_or_fragment(request, "web/memory_correct.html", "web/_memory_correct_form.html", context,
                                status=status)
    if request.htmx and request.method == "POST":
        # The form posts into the whole memory panel; an invalid edit only replaces the form again.
        response = reswap(retarget(response, "#memory-statement"), "innerHTML")
        response.status_code = 200  # htmx swaps only successful answers
    return response


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete(request, memory_id):
    memory = memory_for_change(request, memory_id)
    if request.method == "POST":
        with_sources = request.POST.get("with_sources") == "on"  # the checkbox of _deletion_confirm.html
        receipt = govern.memory_delete(memory=memory, actor=actor_of(request), with_sources=with_sources)
        messages.success(request, "The memory, its other versions, the messages it came from and what was built "
                                  "only from them are deleted." if with_sources else
                                  "The memory, its other versions and what was built only from it are deleted.")
        return redirect_after_action(request, "web:receipt", receipt_id=receipt.pk)
    plan, full = govern.plan_memory_deletion(memory), govern.plan_memory_deletion(memory, with_sources=True)
    return page_or_fragment(request, "web/memory_delete.html", "web/_deletion_confirm.html",
                            {"memory": memory, "preview": dashboard.deletion_preview(principal_of(request), plan),
                             "offer": dashboard.sources_offer(principal_of(request), plan, full), "what": "memory",
                             "action": reverse("web:memory-delete", args=[memory.pk])})


@login_required
@require_http_methods(["GET", "POST"])
def episode_delete(request, episode_id):
    episode = episode_for_change(request, episode_id)
    if request.method == "POST":
        receipt = govern.episode_delete(episode=episode, actor=actor_of(request))
        messages.success(request, "The source and every memory that came only from it are deleted.")
        return redirect_after_action(request, "web:receipt", receipt_id=receipt.pk)
    preview = dashboard.deletion_preview(principal_of(request), govern.plan_episode_deletion(episode))
    back = request.GET.get("from", "")
    return page_or_fragment(request, "web/episode_delete.html", "web/_deletion_confirm.html",
                            {"episode": episode, "preview": preview, "what": "source",
                             "action": request.path, "back": back if back.startswith("/memories/") else "/"})


@login_required
@require_GET
def receipt(request, receipt_id):
    return render(request, "web/receipt.html", {**nav_context(request),
                                                "receipt": receipt_for_reading(request, receipt_id),
                                                "purge_within_minutes": purge_delay_minutes()})


@login_required
@require_GET
def export(request):
    document = govern.user_export(user=request.user)
    response = JsonResponse(document, json_dumps_params={"indent": 2, "ensure_ascii": False})
    filename = f"memoryapp-export-{request.user.external_id}-{timezone.now():%Y%m%d}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def memory_writing(request):
    return _switch(request, govern.memory_writing_set, "web/_memory_writing.html",
                   paused="Memory writing is paused: nothing new will be remembered about you.",
                   resumed="Memory writing is on again.", invalid="Choose pause or resume.")


@login_required
@require_POST
def agents_reading(request):
    return _switch(request, govern.agents_reading_set, "web/_agents_reading.html",
                   paused="Agents no longer read your memories: their searches about you come back refused.",
                   resumed="Agents may read your memories again.", invalid="Choose stop or allow.")


def _switch(request, switch_set, template: str, *, paused: str, resumed: str, invalid: str):
    """One of the user's switches set through its service, said in a message, answered as its fragment."""
    form = SwitchForm(request.POST)
    if form.is_valid():
        switch_set(user=request.user, paused=form.cleaned_data["paused"], actor=actor_of(request))
        messages.success(request, paused if form.cleaned_data["paused"] else resumed)
    else:
        messages.error(request, invalid)
    if request.htmx:
        return fragment(request, template, {"user": request.user})
    return redirect("web:memories")


@login_required
@require_POST
def agent_block(request, agent_id):
    agent = Agent.objects.filter(pk=agent_id, organization_id=request.user.organization_id).first()
    form = AgentBlockForm(request.POST)
    if agent is None or not form.is_valid():
        messages.error(request, "Choose an agent of your organization, then block or unblock.")
        return redirect("web:memories")
    blocked = form.cleaned_data["blocked"]
    govern.agent_block_set(user=request.user, agent=agent, blocked=blocked, actor=actor_of(request))
    messages.success(request, f"{agent.name} can no longer read or write your memories." if blocked
                     else f"{agent.name} may read and write your memories again.")
    return redirect("web:memories")


@login_required
@require_POST
def memory_review(request, memory_id):
    memory = memory_for_change(request, memory_id)
    govern.memory_review_clear(memory=memory, actor=actor_of(request))
    messages.success(request, "Marked as right: the review flag is cleared.")
    return redirect(reverse("web:memory", args=[memory.pk]))


@login_required
@require_http_methods(["GET", "POST"])
def memories_delete_all(request):
    if request.method == "POST":
        receipt = govern.user_memories_delete(user=request.user, actor=actor_of(request))
        messages.success(request, "All your memories and the messages they came from are deleted.")
        return redirect("web:receipt", receipt_id=receipt.pk)
    plan = govern.plan_user_deletion(request.user)
    return render(request, "web/memories_delete_all.html", {**nav_context(request), "plan": plan})
