from django.contrib import admin
from django.urls import include, path

from memoryapp import health
from memoryapp.mcp_server.http import mcp_view

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/v1/", include("memoryapp.api.urls")),
    path("mcp", mcp_view, name="mcp"),
    path("django-admin/", admin.site.urls),
    path("", include("memoryapp.web.urls")),
]
