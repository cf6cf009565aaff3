"""Accounts: logging in (failed attempts are throttled by django-axes, see settings) and the user's
own password, which an invited user must choose before anything else (web.middleware)."""

from __future__ import annotations

import math

from axes.helpers import get_client_ip_address, get_cool_off, get_failure_limit
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from memoryapp.services import tenancy
from memoryapp.web.forms import FirstPasswordForm, PasswordChangeForm
from memoryapp.web.rendering import nav_context


class LoginView(auth_views.LoginView):
    template_name = "web/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form):
        response = super().form_valid(form)
        tenancy.login_failures_forget(username=form.cleaned_data["username"],
                                      ip_address=get_client_ip_address(self.request))
        return response


def lockout(request, original_response, credentials) -> HttpResponse:
    """What a locked login gets (settings.AXES_LOCKOUT_CALLABLE), in place of the login page."""
    cool_off = get_cool_off(request)
    context = {"failure_limit": get_failure_limit(request, credentials),
               "minutes": math.ceil(cool_off.total_seconds() / 60)}
    return render(request, "web/lockout.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)


def _safe_next(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                       require_https=request.is_secure()):
        return target
    return ""


@login_required
@require_http_methods(["GET", "POST"])
def password(request):
    first = request.user.must_change_password
    form_class = FirstPasswordForm if first else PasswordChangeForm
    form = form_class(request.user, request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        tenancy.user_password_set(user=request.user, password=form.cleaned_data["new_password1"])
        update_session_auth_hash(request, request.user)  # this session stays; the others end
        if first:
            messages.success(request, "Your password is set. The one-time password no longer works.")
            return redirect(_safe_next(request) or "web:memories")
        messages.success(request, "Your password is changed. Sessions on other devices were logged out.")
        return redirect("web:password")
    context = {**nav_context(request), "form": form, "first": first, "next": _safe_next(request)}
    return render(request, "web/password.html", context, status=400 if form.errors else 200)
