from django.contrib import admin
from django.urls import path

from memoryapp import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("django-admin/", admin.site.urls),
]
