"""What a user does to their memories: correct, delete (preview, then receipt), export, pause."""

import json

import pytest

from memoryapp.models import DeletionReceipt, Episode, Memory, MemoryEvent
from tests.factories import say
from tests.web.conftest import htmx, remember

pytestmark = pytest.mark.django_db


def test_correct_creates_a_user_corrected_version(alice_client, alice_memory):
    form = alice_client.get(f"/memories/{alice_memory.pk}/correct/")
    assert form.status_code == 200 and b"Alice lives in Porto." in form.content
    response = alice_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": "Alice lives in Braga."})
    corrected = Memory.objects.get(text="Alice lives in Braga.")
    assert response.status_code == 302 and response.url == f"/memories/{corrected.pk}/"
    assert corrected.provenance == Memory.Provenance.USER_CORRECTED and corrected.supersedes_id == alice_memory.pk
    alice_memory.refresh_from_db()
    assert alice_memory.status == Memory.Status.INVALIDATED
    page = alice_client.get(response.url).content.decode()
    assert "Saved as a new version" in page and "User Corrected" in page
    assert "Alice lives in Porto." in page, "the old version stays in the history"


def test_correct_with_htmx_returns_the_updated_fragment(alice_client, alice_memory):
    response = alice_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": "Alice lives in Faro."}, **htmx())
    corrected = Memory.objects.get(text="Alice lives in Faro.")
    assert response.status_code == 200 and b"<html" not in response.content
    assert response["HX-Push-Url"] == f"/memories/{corrected.pk}/"
    html = response.content.decode()
    assert 'id="memory-detail"' in html and "Alice lives in Faro." in html
    assert '<div id="messages" class="messages" aria-live="polite" hx-swap-oob="true">' in html
    assert "Saved as a new version" in html


def test_an_empty_correction_is_refused_and_changes_nothing(alice_client, alice_memory):
    plain = alice_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": "   "})
    assert plain.status_code == 400 and b"form-error" in plain.content
    swapped = alice_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": ""}, **htmx())
    assert swapped.status_code == 200 and swapped["HX-Retarget"] == "#memory-statement"
    assert Memory.objects.filter(user=alice_memory.user).count() == 1


def test_saving_an_unchanged_correction_says_so_and_keeps_one_version(alice_client, alice_memory):
    response = alice_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": alice_memory.text})
    assert response.status_code == 400 and b"nothing to correct" in response.content
    alice_memory.refresh_from_db()
    assert alice_memory.status == Memory.Status.ACTIVE and Memory.objects.filter(user=alice_memory.user).count() == 1


def test_an_outdated_version_cannot_be_corrected(alice_client, alice):
    remember(alice, "I live in Porto.", when="2025-03-10")
    remember(alice, "I moved to Lisbon.", when="2025-06-02")
    porto = Memory.objects.get(text="Alice lives in Porto.")
    response = alice_client.post(f"/memories/{porto.pk}/correct/", {"text": "Alice lived in Braga."})
    assert response.status_code == 400 and b"only an active memory can be corrected" in response.content
    assert b"Correct</a>" not in alice_client.get(f"/memories/{porto.pk}/").content


def test_delete_shows_a_preview_then_a_receipt(alice_client, alice):
    remember(alice, "I live in Porto.", when="2025-03-10")
    (lisbon,) = remember(alice, "I moved to Lisbon.", when="2025-06-02")
    preview = alice_client.get(f"/memories/{lisbon.pk}/delete/")
    html = preview.content.decode()
    assert preview.status_code == 200 and "Delete this memory for good?" in html
    assert "<strong>2</strong> memories deleted" in html, "its earlier version goes too"
    assert "Also delete the messages it came from" in html
    assert "I live in Porto." in html and "I moved to Lisbon." in html, "the offer lists the messages"
    assert Memory.objects.filter(user=alice).count() == 2, "the preview deletes nothing"

    response = alice_client.post(f"/memories/{lisbon.pk}/delete/")
    receipt = DeletionReceipt.objects.get()
    assert response.status_code == 302 and response.url == f"/receipts/{receipt.pk}/"
    assert Memory.objects.filter(user=alice).count() == 0
    page = alice_client.get(response.url).content.decode()
    assert "Deletion receipt" in page and str(receipt.pk) in page and lisbon.pk.hex[:8] in page.replace("-", "")
    assert "<dd>a memory</dd>" in page
    assert "Lisbon" not in page and "Porto" not in page, "a receipt names ids and counts, never content"


def test_deleting_a_memory_can_take_its_messages_so_agents_cannot_find_it_again(alice_client, alice):
    from memoryapp.actors import Principal
    from memoryapp.selectors.search import SearchParams, search_episodes

    remember(alice, "I live in Lisbon.")
    (cat,) = remember(alice, "I have a cat named Miso.")
    html = alice_client.get(f"/memories/{cat.pk}/delete/").content.decode()
    assert '<input type="checkbox" name="with_sources" checked>' in html, "suggested: it says nothing else"
    assert "Also delete the message it came from" in html and "I have a cat named Miso." in html
    assert "It says nothing else that is remembered." in html

    response = alice_client.post(f"/memories/{cat.pk}/delete/", {"with_sources": "on"})

    receipt = DeletionReceipt.objects.get()
    assert receipt.deleted["episodes"]["count"] == 1 and receipt.deleted["memories"]["ids"] == [str(cat.pk)]
    page = alice_client.get(response.url).content.decode()
    assert "<dd>a memory and the messages it came from</dd>" in page and "Miso" not in page
    hits = search_episodes(Principal.for_user(alice), user=alice,
                           params=SearchParams(query="Does Alice have a cat?", k=20, min_score=-1)).hits
    assert [h.item.content for h in hits] == ["I live in Lisbon."], "episode search no longer quotes it"


def test_the_offer_is_unchecked_and_lists_what_else_a_shared_message_takes(alice_client, alice):
    remember(alice, "I have a cat named Miso. I live in Lisbon.")
    cat = Memory.objects.get(user=alice, attribute="pet")
    html = alice_client.get(f"/memories/{cat.pk}/delete/").content.decode()
    assert '<input type="checkbox" name="with_sources">' in html, "not checked: it costs another memory"
    assert "This message says more than this memory." in html
    offer = html[html.index('id="with-sources"'):]
    assert "These memories go too" in offer and "Alice lives in Lisbon." in offer

    alice_client.post(f"/memories/{cat.pk}/delete/")  # the box left unchecked
    assert Episode.objects.filter(user=alice).count() == 1
    assert list(Memory.objects.filter(user=alice).values_list("text", flat=True)) == ["Alice lives in Lisbon."]


def test_delete_with_htmx_redirects_on_the_client(alice_client, alice_memory):
    panel = alice_client.get(f"/memories/{alice_memory.pk}/delete/", **htmx())
    assert b'id="deletion-confirm"' in panel.content and b"<html" not in panel.content
    response = alice_client.post(f"/memories/{alice_memory.pk}/delete/", **htmx())
    assert response.status_code == 200 and response["HX-Redirect"].startswith("/receipts/")


def test_deleting_a_source_episode_previews_then_deletes_what_came_only_from_it(alice_client, alice, alice_memory):
    episode = alice_memory.sources.get()
    preview = alice_client.get(f"/episodes/{episode.pk}/delete/?from=/memories/{alice_memory.pk}/")
    html = preview.content.decode()
    assert "Delete this source for good?" in html and "I live in Porto." in html
    assert f'href="/memories/{alice_memory.pk}/"' in html, "cancel goes back to the memory"
    response = alice_client.post(f"/episodes/{episode.pk}/delete/")
    assert response.status_code == 302 and response.url.startswith("/receipts/")
    assert not Episode.objects.filter(pk=episode.pk).exists()
    assert not Memory.objects.filter(pk=alice_memory.pk).exists()
    receipt = alice_client.get(response.url).content.decode()
    assert "Porto" not in receipt and "<dd>a source episode</dd>" in receipt


def test_deleting_a_source_merged_into_a_memory_previews_it_as_rebuilt_then_rebuilds_it(alice_client, alice):
    remember(alice, "I'm vegetarian.")
    remember(alice, "I still eat eggs.", when="2025-03-12")
    diet = Memory.objects.get(user=alice, attribute="diet")
    eggs = Episode.objects.get(user=alice, content="I still eat eggs.")
    html = alice_client.get(f"/episodes/{eggs.pk}/delete/").content.decode()
    assert "<strong>0</strong> memories deleted" in html
    assert "<strong>1</strong> memory or summary rebuilt from what remains" in html
    alice_client.post(f"/episodes/{eggs.pk}/delete/")
    diet.refresh_from_db()
    assert diet.text == "Alice is vegetarian."


def test_the_memory_page_offers_to_delete_each_source(alice_client, alice_memory):
    episode = alice_memory.sources.get()
    html = alice_client.get(f"/memories/{alice_memory.pk}/").content.decode()
    assert f"/episodes/{episode.pk}/delete/" in html


def test_export_downloads_everything_as_json(alice_client, alice_memory):
    response = alice_client.get("/export/")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith('attachment; filename="memoryapp-export-alice-')
    document = json.loads(response.content)
    assert [m["text"] for m in document["memories"]] == ["Alice lives in Porto."]
    assert [e["content"] for e in document["episodes"]] == ["I live in Porto."]
    assert {"format", "events", "user"} <= set(document)


def test_pause_stops_remembering_and_resume_restarts(alice_client, alice):
    response = alice_client.post("/memory-writing/", {"paused": "true"})
    assert response.status_code == 302 and response.url == "/"
    alice.refresh_from_db()
    assert alice.memory_paused is True
    assert say(alice, "I live in Porto.") is None, "nothing is stored while paused"
    page = alice_client.get("/").content.decode()
    assert "Memory writing is paused" in page and "Resume" in page
    assert MemoryEvent.objects.filter(user_id=alice.id, reason="memory writing paused").exists()

    resumed = alice_client.post("/memory-writing/", {"paused": "false"}, **htmx())
    assert resumed.status_code == 200 and b"<html" not in resumed.content
    assert b'id="memory-writing"' in resumed.content and b"Pause</button>" in resumed.content
    alice.refresh_from_db()
    assert alice.memory_paused is False


def test_actions_are_posts_only(alice_client, alice_memory):
    assert alice_client.get("/memory-writing/").status_code == 405
    assert alice_client.put(f"/memories/{alice_memory.pk}/delete/").status_code == 405
