"""What the OpenAPI document says beyond the views: how agents sign in, and the error body."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.hooks import postprocess_schema_enums

ERROR_STATUSES = {
    "400": "invalid input (`fields` names each bad field)",
    "401": "no or an unknown agent key",
    "403": "the key lacks the permission, or the agent is disabled",
    "404": "no such object for this caller (another tenant's objects do not exist here)",
    "413": "the request body is too large",
    "429": "too many requests (see Retry-After)",
}
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string", "example": "invalid"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": True},
            },
        }
    },
}


class AgentKeyScheme(OpenApiAuthenticationExtension):
    target_class = "memoryapp.api.auth.AgentKeyAuthentication"
    name = "agentKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an agent key: `Authorization: Bearer <key>`"}


def postprocess(result, generator, **kwargs):
    """drf-spectacular's enum hook, then the error body on every operation (views raise, errors.py answers)."""
    result = postprocess_schema_enums(result, generator, **kwargs)
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for status_code, description in ERROR_STATUSES.items():
                operation["responses"].setdefault(status_code, {"description": description, "content": error})
    return result
