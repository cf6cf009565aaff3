"""Real Chromium (the system one, never a downloaded build) driven by Playwright against the live server."""

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: Playwright's event loop must be gone before tests of other modules run."""
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: `make test` installs it (apt-get install -y chromium)")
    from playwright import sync_api
    # Playwright's sync API keeps an event loop in this thread while it runs; the tests' own ORM
    # calls (and the database flush after each test) stay synchronous and sequential, so Django's
    # guard against async contexts does not apply. Module scope: it outlives the per-test flush.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_api.sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


@pytest.fixture
def page(browser, live_server):
    """A fresh browser context; any request that leaves the live server (a CDN, say) is refused and recorded."""
    context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=live_server.url)
    context.outside_requests = []

    def only_live_server(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            context.outside_requests.append(route.request.url)
            route.abort()

    context.route("**/*", only_live_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    assert context.outside_requests == [], "the dashboard must not load anything from outside (no CDN)"
    context.close()


@pytest.fixture
def screenshot(page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str, *, full_page: bool = True) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.wait_for_load_state()  # a click returns once the next page starts to render, not when it is whole
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take
