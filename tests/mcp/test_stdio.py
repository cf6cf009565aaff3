"""`manage.py mcp` over stdio, started as a local MCP client starts it: the remember → recall → forget
story, the client named in the access log, and a key without delete permission refused."""

import os
import subprocess
import sys

import pytest

from memoryapp.models import AccessLog, DeletionReceipt, Memory
from tests.conftest import ROOT, database_url_for_other_processes
from tests.factories import make_agent
from tests.mcp.conftest import over_stdio

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_recall_forget_story_over_stdio(acme, alice):
    agent, key = make_agent(acme, "desktop")

    async def story(call):
        remembered = await call("remember", user="alice", messages=[
            {"role": "user", "content": "I moved to Lisbon last month."}])
        recalled = await call("recall", user="alice", query="where does alice live")
        memory_id = recalled[1]["results"][0]["memory"]["id"]
        preview = await call("forget", memory_id=memory_id)
        receipt = await call("forget", memory_id=memory_id, confirm=True)
        again = await call("recall", user="alice", query="where does alice live")
        return remembered, recalled, preview, receipt, again, memory_id

    remembered, recalled, preview, receipt, again, memory_id = over_stdio(key, story)
    assert not remembered[0] and remembered[1]["operations"][0]["op"] == "ADD", remembered
    assert "Lisbon" in recalled[1]["results"][0]["memory"]["text"]
    assert not preview[0] and preview[1]["preview"] is True
    assert not receipt[0] and receipt[1]["receipt_id"]
    assert DeletionReceipt.objects.filter(pk=receipt[1]["receipt_id"]).exists()
    assert memory_id not in str(again[1]) and not Memory.objects.filter(pk=memory_id).exists()
    log = AccessLog.objects.filter(endpoint="mcp:recall (memoryapp-tests)").first()
    assert log is not None and log.actor_id == str(agent.id)


def test_a_key_without_delete_permission_cannot_forget_over_stdio(acme, alice):
    from tests.factories import make_memory

    memory = make_memory(alice, "Alice is vegetarian.")
    _, key = make_agent(acme, "read-write", permissions=["read", "write"])

    async def forget(call):
        return await call("forget", memory_id=str(memory.id)), await call("forget", memory_id=str(memory.id),
                                                                            confirm=True)

    for error, body in over_stdio(key, forget):
        assert error and body["error"]["code"] == "permission_denied"
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_the_command_refuses_to_start_without_a_usable_key(db):
    env = {**os.environ, "DATABASE_URL": database_url_for_other_processes(), "MEMORYAPP_AGENT_KEY": "mk_nonsense"}
    result = subprocess.run([sys.executable, "manage.py", "mcp"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode != 0 and "unknown or revoked agent key" in result.stderr
