"""Every dashboard page, as the user and as the admin, at 1300, 1000 and 390 px: nothing cut, no
sideways scrolling, chart labels readable, single-card pages centred. Screenshots go to
test-output/screenshots/layout-<page>-<width>.png; the assertions read element boxes."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.demo import demo_seed
from memoryapp.models import Agent, DeletionReceipt, Job, Memory, Organization
from tests.browser.test_dashboard import PASSWORD, log_in
from tests.web.test_evaluation import locomo_result, metrics_result

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1300, 1000, 390)

# What a page breaks: boxes wider than the window, buttons cut by the window or by a scrolling box
# around them, chart text under 11 px, and a lone card not centred in the main column.
MEASURE = """() => {
  const width = window.innerWidth, problems = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  const visible = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden'; };
  if (document.scrollingElement.scrollWidth > width)
    problems.push(`the page scrolls sideways: ${document.scrollingElement.scrollWidth} > ${width}`);
  for (const el of document.querySelectorAll('main *')) {
    if (!visible(el) || el.closest('svg')) continue;
    const r = el.getBoundingClientRect();
    if (r.width > width + 0.5) problems.push(`${name(el)} is ${Math.round(r.width)} px wide`);
  }
  for (const el of document.querySelectorAll('main button, main .button, main input[type=submit]')) {
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    const label = `${name(el)} "${el.textContent.trim()}"`;
    if (r.left < -0.5 || r.right > width + 0.5) { problems.push(`${label} leaves the window`); continue; }
    if (el.scrollWidth > el.clientWidth + 1) problems.push(`${name(el)} "${el.textContent.trim()}" cuts its label`);
    for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      const s = getComputedStyle(box);
      if (s.overflowX === 'visible') continue;
      const b = box.getBoundingClientRect();
      if (r.left < b.left - 0.5 || r.right > b.right + 0.5)
        problems.push(`${name(el)} "${el.textContent.trim()}" is cut by ${name(box)}`);
    }
  }
  for (const text of document.querySelectorAll('main svg text')) {
    const r = text.getBoundingClientRect();
    if (r.height > 0 && r.height < 11)
      problems.push(`chart text "${text.textContent.trim()}" is ${r.height.toFixed(1)} px tall`);
  }
  const cards = document.querySelectorAll('main .narrow');
  if (cards.length === 1 && width > 800) {
    const main = document.querySelector('main').getBoundingClientRect(), r = cards[0].getBoundingClientRect();
    if (Math.abs((r.left - main.left) - (main.right - r.right)) > 24) problems.push('the single card is not centred');
  }
  return [...new Set(problems)];
}"""


def _evaluation_runs(organization: Organization) -> None:
    now = timezone.now()
    for days, contradiction in ((6, 0.04), (3, 0.03), (0, 0.02)):
        Job.objects.create(kind="metrics", organization=organization, status=Job.Status.SUCCEEDED,
                           progress=1.0, result=metrics_result(contradiction, 0.01),
                           started_at=now - timedelta(days=days, minutes=1), finished_at=now - timedelta(days=days))
    Job.objects.create(kind="evaluate_locomo", organization=organization, status=Job.Status.SUCCEEDED, progress=1.0,
                       result=locomo_result(), started_at=now, finished_at=now)


def _check(page, screenshot, name: str, path: str, problems: dict) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(path)
        page.wait_for_load_state("networkidle")
        screenshot(f"layout-{name}-{width}")
        for problem in page.evaluate(MEASURE):
            problems.setdefault(f"{name} at {width} px", []).append(problem)


def test_every_page_fits_at_1300_1000_and_390_px(page, screenshot):
    demo_seed(password=PASSWORD)
    organization = Organization.objects.get(users__username="sam")
    _evaluation_runs(organization)
    memory = Memory.objects.filter(user__username="sam", text="Sam eats fish.").first()
    receipt = DeletionReceipt.objects.create(organization=organization, user_id=memory.user_id, actor_type="user",
                                             actor_id=str(memory.user_id), target="memory",
                                             deleted={"memories": 1, "episodes": 0})
    agent = Agent.objects.get(name="support-bot")
    problems: dict[str, list[str]] = {}

    quarantined = Memory.objects.filter(organization=organization, status=Memory.Status.QUARANTINED).first()
    _check(page, screenshot, "login", "/login/", problems)
    log_in(page, "sam")
    for name, path in (("memories", "/"), ("memory", f"/memories/{memory.pk}/"),
                       ("correct", f"/memories/{memory.pk}/correct/"), ("delete", f"/memories/{memory.pk}/delete/"),
                       ("delete-all", "/memories/delete-all/"),
                       ("receipt", f"/receipts/{receipt.pk}/"), ("password", "/account/password/"),
                       ("forbidden", "/admin/"), ("not-found", "/no-such-page/")):
        _check(page, screenshot, f"user-{name}", path, problems)
    page.context.clear_cookies()

    log_in(page, "admin")
    for name, path in (("provenance", "/admin/"), ("agents", "/admin/agents/"),
                       ("revoke", f"/admin/agents/{agent.pk}/revoke/"), ("quarantine", "/admin/quarantine/"),
                       ("operations", "/admin/events/"), ("access", "/admin/access/"), ("jobs", "/admin/jobs/"),
                       ("evaluation", "/evaluation/"),
                       ("approve", f"/admin/quarantine/{quarantined.pk}/approve/")):
        _check(page, screenshot, f"admin-{name}", path, problems)
    report = "\n".join(f"{where}: {'; '.join(found[:6])}" for where, found in problems.items())
    assert not problems, f"layout problems (screenshots in test-output/screenshots/):\n{report}"
