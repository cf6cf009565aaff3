"""Drive memoryapp's MCP server with the SDK's own client, over HTTP (the live server's /mcp) or stdio
(`manage.py mcp` in a subprocess on the test database)."""

from __future__ import annotations

import json
import os
import sys

import anyio
import httpx2
from django.conf import settings
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from tests.conftest import ROOT, database_url_for_other_processes

CLIENT = Implementation(name="memoryapp-tests", version="1")


class Calls:
    """One open MCP session: tool calls answer (is_error, body) with the JSON body decoded."""

    def __init__(self, session: ClientSession):
        self.session = session

    async def __call__(self, tool: str, **arguments):
        result = await self.session.call_tool(tool, arguments)
        return result.is_error, json.loads(result.content[0].text)

    async def profile(self, user: str) -> dict:
        result = await self.session.read_resource(f"memory://users/{user}/profile")
        return json.loads(result.contents[0].text)


def over_http(url: str, key: str, script):
    """Run `async script(calls)` in one session against `url` (…/mcp) with the key."""

    async def main():
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1], client_info=CLIENT) as session,
        ):
            await session.initialize()
            return await script(Calls(session))

    return anyio.run(main)


def over_stdio(key: str, script):
    """Run `async script(calls)` in one session with `manage.py mcp` started for the key."""
    env = {**os.environ, "DATABASE_URL": database_url_for_other_processes(), "REDIS_URL": settings.REDIS_URL,
           "DJANGO_SETTINGS_MODULE": "memoryapp.settings", "MEMORYAPP_AGENT_KEY": key}
    server = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(ROOT))

    async def main():
        async with (
            stdio_client(server) as streams,
            ClientSession(streams[0], streams[1], client_info=CLIENT) as session,
        ):
            await session.initialize()
            return await script(Calls(session))

    return anyio.run(main)
