"""The dashboard's own "Not found" page for every HTML 404, under DEBUG too (where Django would show its
technical page, listing every URL pattern, to whoever mistypes an address or opens a deleted memory)."""

from __future__ import annotations

from django.shortcuts import render

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
