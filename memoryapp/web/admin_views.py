"""Organization admin pages: provenance browser, agent keys, quarantine, operations and access logs, jobs.
Everything is limited to the admin's organization by the queries and lookups it uses."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memoryapp.jobs import run_job_now
from memoryapp.selectors import dashboard
from memoryapp.services import moderation
from memoryapp.services.tenancy import agent_create, agent_revoke, agent_set_active
from memoryapp.web.forms import (
    JOB_KINDS,
    AccessFilterForm,
    AdminMemoryFilterForm,
    AgentActiveForm,
    AgentCreateForm,
    EventFilterForm,
    JobRunForm,
    QuarantineApproveForm,
)
from memoryapp.web.permissions import actor_of, admin_required, agent_for_admin, principal_of, quarantined_for_admin
from memoryapp.web.rendering import fragment, nav_context, page_or_fragment, paginate, redirect_after_action

# --- provenance browser ---------------------------------------------------------------------


@admin_required
@require_GET
def memories(request):
    form = AdminMemoryFilterForm(request.GET, organization_id=request.user.organization_id)
    listing = dashboard.memories_listing(principal_of(request), user=None, filters=form.filters())
    context = {"form": form, "listing": listing, "page_obj": paginate(request, listing.rows),
               "filtered": any(value for key, value in request.GET.items() if key != "page")}
    return page_or_fragment(request, "web/admin/memories.html", "web/admin/_memories_table.html", context)


# --- agent keys -----------------------------------------------------------------------------


def _agents_context(request, form=None) -> dict:
    principal = principal_of(request)
    return {"agents": dashboard.org_agents(principal),
            "form": form or AgentCreateForm(organization_id=request.user.organization_id)}


@admin_required
@require_http_methods(["GET", "POST"])
def agents(request):
    if request.method == "GET":
        return page_or_fragment(request, "web/admin/agents.html", "web/admin/_agents_table.html",
                                _agents_context(request))
    form = AgentCreateForm(request.POST, organization_id=request.user.organization_id)
    if not form.is_valid():
        return render(request, "web/admin/agents.html", {**nav_context(request), **_agents_context(request, form)},
                      status=400)
    data = form.cleaned_data
    agent, raw_key = agent_create(organization=request.user.organization, name=data["name"],
                                  permissions=data["permissions"], allowed_users=data["allowed_users"],
                                  allowed_projects=data["allowed_projects"], principal=principal_of(request))
    # The raw key exists only in this answer: it is not stored, so it is never shown again.
    response = render(request, "web/admin/agent_created.html", {**nav_context(request), "agent": agent,
                                                                "raw_key": raw_key})
    response["Cache-Control"] = "no-store"
    return response


@admin_required
@require_POST
def agent_active(request, agent_id):
    agent = agent_for_admin(request, agent_id)
    form = AgentActiveForm(request.POST)
    if form.is_valid():
        agent_set_active(agent=agent, active=form.cleaned_data["active"], principal=principal_of(request))
        messages.success(request, f"{agent.name} is {'enabled' if agent.is_active else 'disabled'}.")
    if request.htmx:
        return fragment(request, "web/admin/_agents_table.html", _agents_context(request))
    return redirect_after_action(request, "web:admin-agents")


@admin_required
@require_http_methods(["GET", "POST"])
def agent_revoke_view(request, agent_id):
    agent = agent_for_admin(request, agent_id)
    if request.method == "POST":
        agent_revoke(agent=agent, principal=principal_of(request))
        messages.success(request, f"The key of {agent.name} is revoked: it is refused from now on.")
        return redirect_after_action(request, "web:admin-agents")
    return render(request, "web/admin/agent_revoke.html", {**nav_context(request), "agent": agent})


# --- quarantine -----------------------------------------------------------------------------


def _quarantine_context(request) -> dict:
    return {"queue": dashboard.quarantine_queue(principal_of(request))}


@admin_required
@require_GET
def quarantine(request):
    return page_or_fragment(request, "web/admin/quarantine.html", "web/admin/_quarantine_list.html",
                            _quarantine_context(request))


@admin_required
@require_http_methods(["GET", "POST"])
def quarantine_approve(request, memory_id):
    """Approving always goes through this confirmation page (it works without JavaScript): it shows
    what the memory would replace and lets the admin edit its text first."""
    memory = quarantined_for_admin(request, memory_id)
    form = QuarantineApproveForm(request.POST if request.method == "POST" else None, initial={"text": memory.text})
    if form.is_valid():
        moderation.memory_approve(memory=memory, actor=actor_of(request), text=form.cleaned_data["text"])
        messages.success(request, "Approved: the memory is active and agents can retrieve it, marked unverified.")
        return redirect_after_action(request, "web:admin-quarantine")
    return render(request, "web/admin/quarantine_approve.html", {
        **nav_context(request), "memory": memory, "form": form,
        "replaces": moderation.memory_approval_replaces(memory),
        "action": reverse("web:admin-quarantine-approve", args=[memory.pk]),
    }, status=400 if form.is_bound else 200)


@admin_required
@require_http_methods(["GET", "POST"])
def quarantine_reject(request, memory_id):
    """Rejecting is the safe, primary action: one click in the queue (the source stays in the archive)."""
    memory = quarantined_for_admin(request, memory_id)
    if request.method == "POST":
        receipt = moderation.memory_reject(memory=memory, actor=actor_of(request))
        messages.success(request, f"Rejected and deleted (receipt {receipt.pk}).")
        if request.htmx:
            return fragment(request, "web/admin/_quarantine_list.html", _quarantine_context(request))
        return redirect_after_action(request, "web:admin-quarantine")
    return render(request, "web/admin/quarantine_reject.html", {
        **nav_context(request), "memory": memory, "action": reverse("web:admin-quarantine-reject", args=[memory.pk]),
    })


# --- operations and access logs ---------------------------------------------------------------


def _log_page(request, form, *, log, to_rows, memory_ids_of, name: str):
    """A log's filtered pages of 50. `log(principal, filters)`: its entries; `to_rows(organization_id,
    entries)`: a page of them as rows; `memory_ids_of(row)`: the memories a row names, linked while they
    exist. Templates: web/admin/<name>.html, and web/admin/_<name>_table.html for htmx."""
    principal = principal_of(request)
    page_obj = paginate(request, log(principal, form.filters()), per_page=50)
    rows = to_rows(principal.organization_id, list(page_obj.object_list))
    context = {"form": form, "page_obj": page_obj, "rows": rows,
               "linkable": dashboard.existing_memory_ids(principal, (pk for row in rows for pk in memory_ids_of(row))),
               "filtered": any(value for key, value in request.GET.items() if key != "page")}
    return page_or_fragment(request, f"web/admin/{name}.html", f"web/admin/_{name}_table.html", context)


@admin_required
@require_GET
def events(request):
    return _log_page(request, EventFilterForm(request.GET), log=dashboard.operations_log, to_rows=dashboard.event_rows,
                     memory_ids_of=lambda row: [row.event.memory_id], name="events")


@admin_required
@require_GET
def access(request):
    return _log_page(request, AccessFilterForm(request.GET), log=dashboard.access_log, to_rows=dashboard.access_rows,
                     memory_ids_of=lambda row: row.log.memory_ids, name="access")


# --- jobs -----------------------------------------------------------------------------------


def _jobs_context(request) -> dict:
    principal = principal_of(request)
    return {"kinds": dashboard.job_kinds_status(principal, JOB_KINDS),
            "recent": dashboard.org_jobs(principal)[:20],
            "polling": dashboard.jobs_in_progress(principal)}


@admin_required
@require_GET
def jobs(request):
    return page_or_fragment(request, "web/admin/jobs.html", "web/admin/_jobs_panel.html", _jobs_context(request))


@admin_required
@require_POST
def job_run(request):
    form = JobRunForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown job kind.")
    else:
        job = run_job_now(form.cleaned_data["kind"], request.user.organization)
        messages.success(request, f"{job.kind_label} job queued.")
    if request.htmx:
        return fragment(request, "web/admin/_jobs_panel.html", _jobs_context(request))
    return redirect_after_action(request, "web:admin-jobs")
