from django.contrib import admin
from django.urls import include, path

from memoryapp import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/v1/", include("memoryapp.api.urls")),
    path("django-admin/", admin.site.urls),
    path("", include("memoryapp.web.urls")),
]
