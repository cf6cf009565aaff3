"""The real routes plus views that fail for real (an unexpected error, an unreachable broker),
to check what a client sees when something no view handles goes wrong."""

from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from memoryapp.celery import app as celery_app


def _unexpected(request):
    raise RuntimeError("a bug no view handled")


def _broker_down(request):
    with celery_app.connection_for_write(url="redis://127.0.0.1:9/0") as conn:  # port 9 (discard): nothing listens
        conn.ensure_connection(max_retries=1, timeout=1)


class _UnexpectedInApi(APIView):
    permission_classes = [AllowAny]

    def get(self, request):
        raise RuntimeError("a bug in an API view")


urlpatterns = [
    path("api/v1/test-failures/unexpected", _unexpected),
    path("api/v1/test-failures/drf-unexpected", _UnexpectedInApi.as_view()),
    path("api/v1/test-failures/broker-down", _broker_down),
    path("test-failures/unexpected", _unexpected),
    path("", include("memoryapp.urls")),
]
