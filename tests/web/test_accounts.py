"""Accounts: login attempts are throttled per account and per address; users change their password in
the dashboard; an invited user chooses their own password before anything else."""

import io
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from memoryapp.models import User
from memoryapp.services.tenancy import organization_get_or_create, user_get_or_create_for_agent
from tests.factories import PASSWORD, make_agent, make_user
from tests.web.conftest import client_for, htmx

pytestmark = pytest.mark.django_db

LIMIT = 10  # the shipped settings: ten failures, fifteen minutes


def log_in(username: str, password: str, *, address: str = "127.0.0.1", client: Client | None = None):
    return (client or Client()).post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def assert_locked(response):
    html = response.content.decode()
    assert response.status_code == 429, response.status_code
    assert "Too many login attempts" in html and f"locked after {LIMIT} failed attempts" in html
    assert "Try again in 15 minutes" in html and 'href="/login/"' in html
    assert "sessionid" not in response.cookies, "not logged in"


def test_the_shipped_settings_lock_after_ten_failures_for_fifteen_minutes():
    assert settings.AXES_FAILURE_LIMIT == LIMIT
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == ["username", "ip_address"]
    assert settings.AUTHENTICATION_BACKENDS[0].startswith("axes.backends.")


def test_sixty_wrong_passwords_then_the_right_one_is_refused_with_the_lockout_page(alice):
    client = Client()
    statuses = [log_in(alice.username, f"guess-{n}", client=client).status_code for n in range(60)]
    assert statuses[:LIMIT - 1] == [200] * (LIMIT - 1), "the login page with its error, until the limit"
    assert set(statuses[LIMIT - 1:]) == {429}
    right = log_in(alice.username, PASSWORD, client=client)
    assert_locked(right)
    assert client.get("/").status_code == 302, "still logged out"


def test_failures_spread_over_many_accounts_lock_the_address(alice, bob):
    for n in range(LIMIT):
        log_in(f"someone-{n}", "guess", address="203.0.113.7")
    assert_locked(log_in(bob.username, PASSWORD, address="203.0.113.7"))
    assert log_in(bob.username, PASSWORD, address="198.51.100.1").status_code == 302, "other addresses still work"


def test_failures_from_many_addresses_lock_the_account(alice, bob):
    for n in range(LIMIT):
        log_in(alice.username, "guess", address=f"203.0.113.{n + 1}")
    assert_locked(log_in(alice.username, PASSWORD, address="198.51.100.1"))
    assert log_in(bob.username, PASSWORD, address="198.51.100.1").status_code == 302, "other accounts still work"


def test_the_lock_ends_after_the_cool_off(alice):
    for _ in range(LIMIT):
        log_in(alice.username, "guess")
    assert_locked(log_in(alice.username, PASSWORD))
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16))
    assert log_in(alice.username, PASSWORD).status_code == 302


def test_a_successful_login_forgets_the_users_own_typos(alice):
    for _ in range(2):
        for _ in range(LIMIT - 1):
            log_in(alice.username, "typo")
        assert log_in(alice.username, PASSWORD).status_code == 302


def test_logging_in_to_ones_own_account_does_not_reset_the_count_of_guesses_at_another(acme, alice):
    """Axes' own reset on success forgets every failure from the address: mallory could log in to her
    own account between guesses at alice's and never be locked."""
    mallory = make_user(acme, "mallory")
    for n in range(LIMIT):
        log_in(alice.username, f"guess-{n}", address="203.0.113.9")
        if n % 3 == 2:
            assert log_in(mallory.username, PASSWORD, address="203.0.113.9").status_code == 302
    assert_locked(log_in(alice.username, PASSWORD, address="203.0.113.9"))


def test_agent_keys_are_never_locked_out(acme, alice):
    _, key = make_agent(acme, "planner")
    for n in range(LIMIT + 2):
        log_in(f"someone-{n}", "guess")
    response = Client().get("/api/v1/memories", HTTP_AUTHORIZATION=f"Bearer {key}", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200


# Changing the password


def test_the_password_page_is_in_the_menu_and_changes_the_password(alice_client, alice):
    home = alice_client.get("/").content.decode()
    assert 'href="/account/password/"' in home
    page = alice_client.get("/account/password/")
    assert page.status_code == 200 and "Change your password" in page.content.decode()
    assert 'aria-current="page">Password</a>' in page.content.decode()

    wrong_old = alice_client.post("/account/password/", {"old_password": "nope", "new_password1": "plum-orchard-42",
                                                         "new_password2": "plum-orchard-42"})
    assert wrong_old.status_code == 400 and "Your old password was entered incorrectly" in wrong_old.content.decode()
    weak = alice_client.post("/account/password/", {"old_password": PASSWORD, "new_password1": "qwerty",
                                                    "new_password2": "qwerty"})
    assert weak.status_code == 400 and "This password is too common." in weak.content.decode()
    assert "This password is too short." in weak.content.decode()

    changed = alice_client.post("/account/password/", {"old_password": PASSWORD, "new_password1": "plum-orchard-42",
                                                       "new_password2": "plum-orchard-42"}, follow=True)
    assert changed.status_code == 200 and "Your password is changed." in changed.content.decode()
    assert alice_client.get("/").status_code == 200, "this session stays logged in"
    assert log_in(alice.username, PASSWORD).status_code == 200, "the old password no longer works"
    assert log_in(alice.username, "plum-orchard-42").status_code == 302


def test_changing_the_password_logs_out_other_sessions(alice):
    here, elsewhere = client_for(alice), client_for(alice)
    here.post("/account/password/", {"old_password": PASSWORD, "new_password1": "plum-orchard-42",
                                     "new_password2": "plum-orchard-42"})
    assert here.get("/").status_code == 200
    assert elsewhere.get("/").status_code == 302


# Invited users


@pytest.fixture
def invited():
    """Alex, whom an agent created, invited with the command: the one-time password it printed."""
    user_get_or_create_for_agent(organization=organization_get_or_create(name="Acme"), external_id="alex")
    out = io.StringIO()
    call_command("invite_user", "--org", "Acme", "--user", "alex", "--username", "alex", stdout=out)
    assert "one-time password" in out.getvalue() and "must choose their own" in out.getvalue()
    return out.getvalue().split("password ")[1].split(" ")[0]


def test_an_invited_user_must_choose_a_password_before_anything_else(invited):
    client = Client()
    assert log_in("alex", invited, client=client).status_code == 302
    assert client.get("/")["Location"] == "/account/password/"
    assert client.get("/evaluation/")["Location"] == "/account/password/?next=%2Fevaluation%2F"
    assert client.get("/export/")["Location"] == "/account/password/?next=%2Fexport%2F"
    assert client.post("/memory-writing/", {"paused": "true"})["Location"] == "/account/password/"
    assert client.get("/", **htmx())["HX-Redirect"] == "/account/password/"
    api = client.get("/api/v1/memories")
    assert api.status_code == 403 and api.json()["error"]["code"] == "password_change_required"
    assert client.get("/static/css/app.css").status_code == 200

    page = client.get("/account/password/?next=/evaluation/")
    html = page.content.decode()
    assert page.status_code == 200 and "Choose your own password" in html
    assert 'name="old_password"' not in html, "they have just typed the one-time password"
    assert 'aria-label="Main"' not in html, "no menu to pages they cannot open yet"
    same = client.post("/account/password/", {"new_password1": invited, "new_password2": invited})
    assert same.status_code == 400 and "different from the one you have now" in same.content.decode()

    chosen = client.post("/account/password/", {"new_password1": "plum-orchard-42", "new_password2": "plum-orchard-42",
                                                "next": "/evaluation/"})
    assert chosen.status_code == 302 and chosen["Location"] == "/evaluation/"
    assert client.get("/").status_code == 200
    assert User.objects.get(username="alex").must_change_password is False
    assert log_in("alex", invited).status_code == 200, "the one-time password is spent"
    assert log_in("alex", "plum-orchard-42").status_code == 302


def test_an_invited_user_can_log_out_before_choosing(invited):
    client = Client()
    log_in("alex", invited, client=client)
    assert client.post("/logout/")["Location"] == "/login/"
    assert client.get("/")["Location"] == "/login/?next=/"


def test_the_password_page_shows_the_message_after_the_first_choice(invited):
    client = Client()
    log_in("alex", invited, client=client)
    chosen = client.post("/account/password/", {"new_password1": "plum-orchard-42",
                                                "new_password2": "plum-orchard-42"}, follow=True)
    html = chosen.content.decode()
    assert chosen.redirect_chain[-1][0] == "/" and "Your password is set." in html
    assert 'aria-label="Main"' in html, "the menu is back (Evaluation is an admin tab since issue 21)"
