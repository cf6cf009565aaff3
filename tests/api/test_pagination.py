"""Lists never skip or repeat: rows that share a timestamp (an imported conversation stored at one
instant) are each shown exactly once, whatever the page size, forwards and backwards."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from memoryapp.models import Episode, Memory
from tests.factories import at

pytestmark = pytest.mark.django_db
SAME_INSTANT = at("2025-03-10T12:00")


@pytest.fixture
def crowded(acme, alice):
    """230 episodes and 130 memories of alice, most at one instant, a few before and after it."""
    times = [at("2025-03-09")] * 5 + [SAME_INSTANT] * 220 + [at("2025-03-11")] * 5
    Episode.objects.bulk_create(
        Episode(organization=acme, user=alice, source="user", trust="trusted", content=f"message {i}",
                occurred_at=when, received_at=when)
        for i, when in enumerate(times)
    )
    Memory.objects.bulk_create(
        Memory(organization=acme, user=alice, scope="user", text=f"fact {i}", valid_from=SAME_INSTANT,
               recorded_at=SAME_INSTANT, last_accessed_at=SAME_INSTANT, embedding=[1.0] + [0.0] * 383,
               search_embedding=[1.0] + [0.0] * 383)
        for i in range(130)
    )


def walk(client, path: str, key: str = "next") -> list[list[str]]:
    pages = []
    while path:
        response = client.get(path)
        assert response.status_code == 200, response.body
        pages.append([row["id"] for row in response.body["results"]])
        link = response.body[key]
        path = None if link is None else link.split("/api/v1/", 1)[1]
    return pages


@pytest.mark.parametrize("page_size", [7, 50, 200])
def test_episode_pages_show_every_row_once(crowded, acme_agent, page_size):
    pages = walk(acme_agent, f"episodes?user=alice&page_size={page_size}")
    ids = [pk for page in pages for pk in page]
    assert len(ids) == 230 and len(set(ids)) == 230
    assert all(len(page) == page_size for page in pages[:-1])
    first_link = acme_agent.get(f"episodes?user=alice&page_size={page_size}").body["previous"]
    assert first_link is None


def test_memory_pages_show_every_row_once(crowded, acme_agent):
    ids = [pk for page in walk(acme_agent, "memories?user=alice&page_size=50") for pk in page]
    assert len(ids) == 130 and len(set(ids)) == 130


def test_previous_links_walk_back_over_the_same_pages(crowded, acme_agent):
    forward = walk(acme_agent, "episodes?user=alice&page_size=30")
    last = acme_agent.get("episodes?user=alice&page_size=30")
    for _ in range(len(forward) - 1):
        last = acme_agent.get(last.body["next"].split("/api/v1/", 1)[1])
    backward = walk(acme_agent, urlsplit(last.body["previous"]).path.split("/api/v1/", 1)[1] + "?"
                    + urlsplit(last.body["previous"]).query, key="previous")
    assert list(reversed(backward)) == forward[:-1]


@pytest.mark.parametrize("query", ["cursor=bm9uc2Vuc2U", "cursor=%25%25", "page_size=0", "page_size=many"])
def test_a_bad_cursor_or_page_size_is_a_400(crowded, acme_agent, query):
    response = acme_agent.get(f"episodes?user=alice&{query}")
    assert response.status_code == 400 and response.body["error"]["code"] == "invalid"


def test_dashboard_memory_pages_show_every_row_once(crowded, client, alice):
    client.force_login(alice)
    seen = []
    for page in range(1, 8):
        html = client.get(f"/?status=active&page={page}").content.decode()
        seen += [f"fact {i}" for i in range(130) if f">fact {i}<" in html]
    assert len(seen) == 130 and len(set(seen)) == 130
