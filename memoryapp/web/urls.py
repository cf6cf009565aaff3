from django.contrib.auth import views as auth_views
from django.urls import path

from memoryapp.web import account_views, admin_views, evaluation_views, views

app_name = "web"

urlpatterns = [
    path("login/", account_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/password/", account_views.password, name="password"),
    path("", views.memory_list, name="memories"),
    path("memories/<uuid:memory_id>/", views.memory_detail, name="memory"),
    path("memories/<uuid:memory_id>/correct/", views.memory_correct, name="memory-correct"),
    path("memories/<uuid:memory_id>/delete/", views.memory_delete, name="memory-delete"),
    path("episodes/<uuid:episode_id>/delete/", views.episode_delete, name="episode-delete"),
    path("receipts/<uuid:receipt_id>/", views.receipt, name="receipt"),
    path("export/", views.export, name="export"),
    path("memory-writing/", views.memory_writing, name="memory-writing"),
    path("agents-reading/", views.agents_reading, name="agents-reading"),
    path("agents/<uuid:agent_id>/block/", views.agent_block, name="agent-block"),
    path("memories/<uuid:memory_id>/review/", views.memory_review, name="memory-review"),
    path("memories/delete-all/", views.memories_delete_all, name="memories-delete-all"),
    path("admin/", admin_views.memories, name="admin-memories"),
    path("admin/agents/", admin_views.agents, name="admin-agents"),
    path("admin/agents/<uuid:agent_id>/active/", admin_views.agent_active, name="admin-agent-active"),
    path("admin/agents/<uuid:agent_id>/revoke/", admin_views.agent_revoke_view, name="admin-agent-revoke"),
    path("admin/quarantine/", admin_views.quarantine, name="admin-quarantine"),
    path("admin/quarantine/<uuid:memory_id>/approve/", admin_views.quarantine_approve,
         name="admin-quarantine-approve"),
    path("admin/quarantine/<uuid:memory_id>/reject/", admin_views.quarantine_reject, name="admin-quarantine-reject"),
    path("admin/events/", admin_views.events, name="admin-events"),
    path("admin/access/", admin_views.access, name="admin-access"),
    path("admin/jobs/", admin_views.jobs, name="admin-jobs"),
    path("admin/jobs/run/", admin_views.job_run, name="admin-job-run"),
    path("evaluation/", evaluation_views.evaluation, name="evaluation"),
    path("evaluation/measure/", evaluation_views.evaluation_measure, name="evaluation-measure"),
    path("evaluation/changing-facts/", evaluation_views.evaluation_changing_facts,
         name="evaluation-changing-facts"),
    path("evaluation/locomo/", evaluation_views.evaluation_locomo, name="evaluation-locomo"),
    path("evaluation/write-accuracy/", evaluation_views.evaluation_write_accuracy, name="evaluation-write-accuracy"),
    path("evaluation/questions/", evaluation_views.evaluation_questions, name="evaluation-questions"),
]
