"""`manage.py mcp`: memoryapp as an MCP server over stdio, for a local MCP client that starts it.
The agent key comes from MEMORYAPP_AGENT_KEY (never an argument: it would show in `ps`)."""

from __future__ import annotations

import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from rest_framework import exceptions

from memoryapp.mcp_server.server import Context, build_server
from memoryapp.models import Agent

KEY_VARIABLE = "MEMORYAPP_AGENT_KEY"


class Command(BaseCommand):
    help = f"Serve the MCP tools over stdio, as the agent whose key is in ${KEY_VARIABLE}."

    def handle(self, *args, **options):
        key = os.environ.get(KEY_VARIABLE, "").strip()
        if not key:
            raise CommandError(f"set {KEY_VARIABLE} to an agent key (mk_...)")
        if Agent.objects.for_api_key(key) is None:
            raise CommandError(f"{KEY_VARIABLE} holds an unknown or revoked agent key")

        def agent_of(ctx: Context) -> Agent:
            # Looked up on every call: a key revoked while the client runs stops working at once.
            agent = Agent.objects.for_api_key(key)
            if agent is None:
                raise exceptions.AuthenticationFailed("unknown or revoked agent key")
            return agent

        # stdout is the protocol channel: nothing else may print there.
        anyio.run(build_server(agent_of).run_stdio_async)
