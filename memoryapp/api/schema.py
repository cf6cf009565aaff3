"""What the OpenAPI document says beyond the views: how agents sign in. The operations, their answers and
their errors are described in memoryapp.api.contract."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class AgentKeyScheme(OpenApiAuthenticationExtension):
    target_class = "memoryapp.api.auth.AgentKeyAuthentication"
    name = "agentKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an agent key: `Authorization: Bearer <key>`"}

