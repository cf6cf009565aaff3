"""Dashboard forms: they validate input and turn it into the arguments of selectors and services."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django import forms
from django.contrib.auth import forms as auth_forms
from django.utils import timezone

from memoryapp.models import Actor, Agent, Job, Memory, MemoryEvent, Project, User
from memoryapp.selectors.dashboard import LogFilters, MemoryFilters
from memoryapp.services.access import ACCESS_ENDPOINTS
from memoryapp.timebounds import check_in_span

# The jobs an admin may start from the jobs page (memoryapp.jobs runs them): title (the kind's label)
# and what they do.
JOB_KINDS = {kind: (kind.label, about) for kind, about in {
    Job.Kind.CONSOLIDATE: "Merge near-duplicate memories, keeping every source.",
    Job.Kind.SUMMARIZE: "Rebuild each user's profile and topic summaries.",
    Job.Kind.DECAY: "Archive memories nobody recalls any more; enforce per-user caps.",
    Job.Kind.EXPIRE_SESSIONS: "Drop session memories whose conversation has ended.",
    Job.Kind.PURGE: "Rewrite the tables deletions touched and drop old WAL: deleted text leaves disk.",
}.items()}


def _start_of(day) -> datetime | None:
    return timezone.make_aware(datetime.combine(day, time.min)) if day else None


def _end_of(day) -> datetime | None:
    """The end of `day` as an exclusive bound: midnight of the next day."""
    return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min)) if day else None


class DateInput(forms.DateInput):
    input_type = "date"


class MemoryFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search",
                        widget=forms.TextInput(attrs={"placeholder": "Ask like an agent would: what does Sam eat?",
                                                      "type": "search"}))
    # "facts" and "summaries" are selectors.dashboard.KIND_GROUPS; My memories opens on "facts".
    kind = forms.ChoiceField(required=False, choices=[("facts", "Facts"), ("summaries", "Summaries"),
                                                      ("", "Facts and summaries"),
                                                      # plain words for the kinds (issue 21), not "Semantic"
                                                      ("semantic", "Facts, no instructions"),
                                                      ("procedural", "Instructions only"),
                                                      ("reflection", "Reflections only"),
                                                      ("summary", "Summaries only")])
    scope = forms.ChoiceField(required=False, choices=[("", "Any scope"), *Memory.Scope.choices])
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Memory.Status.choices])
    agent = forms.ModelChoiceField(required=False, queryset=Agent.objects.none(), empty_label="Any agent")
    true_from = forms.DateField(required=False, label="True from", widget=DateInput, validators=[check_in_span])
    true_until = forms.DateField(required=False, label="True until", widget=DateInput, validators=[check_in_span])
    review = forms.ChoiceField(required=False, label="Review",
                               choices=[("", "Any"), ("needs", "Needs review")])

    def __init__(self, *args, organization_id, scopes=tuple(Memory.Scope.values), name: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        if name:  # the example is about the person reading it, not a stranger called Sam
            self.fields["q"].widget.attrs["placeholder"] = f"Ask like an agent would: what does {name} eat?"
        self.fields["agent"].queryset = Agent.objects.filter(organization_id=organization_id).order_by("name")
        self.fields["scope"].choices = [("", "Any scope"), *[(s, Memory.Scope(s).label) for s in scopes]]

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("true_from"), cleaned.get("true_until")
        if start and end and start > end:
            self.add_error(None, "The end date comes before the start date.")
        return cleaned

    def filters(self) -> MemoryFilters:
        """The filters to apply; none at all when the form is invalid (its errors are shown)."""
        if not self.is_valid():
            return MemoryFilters()
        data = self.cleaned_data
        return MemoryFilters(
            query=data["q"].strip(), kind=data["kind"], scope=data["scope"], status=data["status"],
            agent=data["agent"], true_from=_start_of(data["true_from"]), true_until=_end_of(data["true_until"]),
            user=data.get("user"), needs_review=data.get("review") == "needs",
        )


class AdminMemoryFilterForm(MemoryFilterForm):
    user = forms.ModelChoiceField(required=False, queryset=User.objects.none(), empty_label="Any user")

    field_order = ["q", "user", "scope", "status", "agent", "kind", "true_from", "true_until"]

    def __init__(self, *args, organization_id, **kwargs):
        super().__init__(*args, organization_id=organization_id, **kwargs)
        self.fields["user"].queryset = User.objects.filter(organization_id=organization_id).order_by("external_id")


class MemoryCorrectForm(forms.Form):
    text = forms.CharField(max_length=2000, label="What is true",
                           widget=forms.Textarea(attrs={"rows": 3, "autofocus": True}))

    def clean_text(self):
        text = " ".join(self.cleaned_data["text"].split())
        if not text:
            raise forms.ValidationError("Write what is true instead.")
        return text


class QuarantineApproveForm(forms.Form):
    """The confirmation step of an approval: the text agents will see, editable first."""

    text = forms.CharField(max_length=2000, label="Text to approve",
                           widget=forms.Textarea(attrs={"rows": 3, "autofocus": True}),
                           error_messages={"required": "Write the text to approve, or reject the memory instead."})

    def clean_text(self):
        return " ".join(self.cleaned_data["text"].split())


class SwitchForm(forms.Form):
    """An on/off switch of the user's (pause memory writing, stop agents reading)."""

    paused = forms.TypedChoiceField(choices=[("true", "off"), ("false", "on")], coerce=lambda v: v == "true")


class AgentBlockForm(forms.Form):
    blocked = forms.TypedChoiceField(choices=[("true", "block"), ("false", "unblock")], coerce=lambda v: v == "true")


class AgentCreateForm(forms.Form):
    name = forms.CharField(max_length=120, widget=forms.TextInput(attrs={"placeholder": "support-bot"}))
    permissions = forms.MultipleChoiceField(choices=Agent.Permission.choices, initial=["read"],
                                            widget=forms.CheckboxSelectMultiple)
    allowed_users = forms.ModelMultipleChoiceField(
        required=False, queryset=User.objects.none(), label="Only these users",
        help_text="Leave empty for every user of the organization.",
    )
    allowed_projects = forms.ModelMultipleChoiceField(
        required=False, queryset=Project.objects.none(), label="Only these projects",
        help_text="Leave empty for every project.",
    )

    def __init__(self, *args, organization_id, **kwargs):
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        self.fields["allowed_users"].queryset = User.objects.filter(organization_id=organization_id).order_by(
            "external_id"
        )
        self.fields["allowed_projects"].queryset = Project.objects.filter(organization_id=organization_id).order_by(
            "name"
        )

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if Agent.objects.filter(organization_id=self.organization_id, name=name).exists():
            raise forms.ValidationError("An agent with this name already exists.")
        return name


class AgentActiveForm(forms.Form):
    active = forms.TypedChoiceField(choices=[("true", "enable"), ("false", "disable")], coerce=lambda v: v == "true")


class _LogFilterForm(forms.Form):
    """Who and when, for a log; each log's form adds `what` (its operation or endpoint) first."""

    actor_type = forms.ChoiceField(required=False, choices=[("", "Any actor"), *Actor.choices])
    actor_id = forms.CharField(required=False, max_length=64, label="Who",
                               widget=forms.TextInput(attrs={"placeholder": "agent or user name, or id"}))
    user = forms.CharField(required=False, max_length=150, label="About user",
                           widget=forms.TextInput(attrs={"placeholder": "external id or name"}))
    since = forms.DateField(required=False, widget=DateInput, validators=[check_in_span])
    until = forms.DateField(required=False, widget=DateInput, validators=[check_in_span])
    field_order = ["what"]

    def filters(self) -> LogFilters:
        if not self.is_valid():
            return LogFilters()
        data = self.cleaned_data
        return LogFilters(what=data["what"], actor_type=data["actor_type"], actor_id=data["actor_id"].strip(),
                          user=data["user"].strip(), since=_start_of(data["since"]), until=_end_of(data["until"]))


class EventFilterForm(_LogFilterForm):
    what = forms.ChoiceField(required=False, label="Operation",
                             choices=[("", "Any operation"), *MemoryEvent.Op.choices])


class AccessFilterForm(_LogFilterForm):
    what = forms.ChoiceField(required=False, label="Endpoint",
                             choices=[("", "Any read"), *((endpoint, endpoint) for endpoint in ACCESS_ENDPOINTS)])


class JobRunForm(forms.Form):
    kind = forms.ChoiceField(choices=[(kind.value, title) for kind, (title, _) in JOB_KINDS.items()])


class _NewPasswordDiffers:
    """A new password the same as the current one would leave a one-time password in use."""

    def clean_new_password1(self):
        password = self.cleaned_data.get("new_password1")
        if password and self.user.check_password(password):
            raise forms.ValidationError("Choose a password different from the one you have now.",
                                        code="password_unchanged")
        return password


class PasswordChangeForm(_NewPasswordDiffers, auth_forms.PasswordChangeForm):
    """The current password, then the new one twice; the settings' validators apply."""


class FirstPasswordForm(_NewPasswordDiffers, auth_forms.SetPasswordForm):
    """At first login the user has just typed the one-time password: only the new one, twice."""
