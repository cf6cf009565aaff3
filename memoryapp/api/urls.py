from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView
from rest_framework.permissions import AllowAny

from memoryapp.api import views
from memoryapp.api.errors import no_such_endpoint

urlpatterns = [
    path("episodes", views.EpisodesView.as_view(), name="api-episodes"),
    path("episodes/search", views.EpisodeSearchView.as_view(), name="api-episode-search"),
    path("episodes/<uuid:episode_id>", views.EpisodeView.as_view(), name="api-episode"),
    path("memories", views.MemoriesView.as_view(), name="api-memories"),
    path("memories/<uuid:memory_id>", views.MemoryView.as_view(), name="api-memory"),
    path("memories/<uuid:memory_id>/history", views.MemoryHistoryView.as_view(), name="api-memory-history"),
    path("search", views.SearchView.as_view(), name="api-search"),
    path("context", views.ContextView.as_view(), name="api-context"),
    path("users/<str:user>/export", views.UserExportView.as_view(), name="api-user-export"),
    path("users/<str:user>/memories", views.UserMemoriesView.as_view(), name="api-user-memories"),
    path("jobs/<uuid:job_id>", views.JobView.as_view(), name="api-job"),
    # The contract is public: anyone may read the schema and the docs page.
    path("schema", SpectacularAPIView.as_view(permission_classes=[AllowAny], authentication_classes=[]),
         name="api-schema"),
    path("docs", SpectacularRedocView.as_view(url_name="api-schema", permission_classes=[AllowAny],
                                              authentication_classes=[]), name="api-docs"),
    re_path(r"", no_such_endpoint),  # last: whatever no route above matched
]
