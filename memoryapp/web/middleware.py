"""Dashboard middleware. NotFoundPage: the dashboard's own "Not found" page for every HTML 404, under
DEBUG too (where Django would show its technical page, listing every URL pattern, to whoever mistypes
an address or opens a deleted memory). PasswordChangeRequired: an invited user chooses a password first."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from memoryapp.web.rendering import nav_context


class NotFoundPage:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        is_html = response.get("Content-Type", "").startswith("text/html")
        if response.status_code == 404 and is_html and not request.path.startswith("/api/"):
            return render(request, "404.html", nav_context(request), status=404)
        return response


class PasswordChangeRequired:
    """An invited user logged in with a one-time password that whoever invited them has seen too:
    until they choose their own, every page sends them to choose it, and the API refuses their
    session. Logging out, static files and agent keys are unaffected."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if self._applies(request):
            if request.path.startswith("/api/"):
                from memoryapp.failures import error_body

                message = f"choose your own password first, at {reverse('web:password')}"
                return JsonResponse(error_body("password_change_required", message), status=403)
            target = reverse("web:password")
            if request.method == "GET" and request.path != "/":
                target += "?" + urlencode({"next": request.get_full_path()})
            return HttpResponseClientRedirect(target) if request.htmx else redirect(target)
        return self.get_response(request)

    @staticmethod
    def _applies(request) -> bool:
        if "HTTP_AUTHORIZATION" in request.META:  # an agent key: DRF authenticates it, not the session
            return False
        if request.path.startswith(settings.STATIC_URL) or request.path == "/healthz":
            return False
        if request.path in (reverse("web:password"), reverse("web:logout")):
            return False
        return request.user.is_authenticated and request.user.must_change_password
