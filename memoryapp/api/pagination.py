"""Newest-first pages keyed on (time, id). A timestamp alone is not unique (a LoCoMo import stores
hundreds of messages at one instant), and DRF's CursorPagination keys on its first ordering field
only, so pages that split a run of equal times skipped some rows and repeated others."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from urllib.parse import urlencode
from uuid import UUID

from django.db.models import Q, QuerySet
from rest_framework import serializers
from rest_framework.pagination import BasePagination
from rest_framework.response import Response


class NewestFirst(BasePagination):
    page_size = 50
    max_page_size = 200

    def __init__(self, time_field: str):
        self.time_field = time_field

    def paginate_queryset(self, queryset: QuerySet, request, view=None) -> list:
        self.request = request
        self.size = self._page_size(request)
        direction, after = self._cursor(request)
        field = self.time_field
        if direction == "next":  # older than the last row shown
            rows = queryset.filter(Q(**{f"{field}__lt": after[0]}) | Q(**{field: after[0], "id__lt": after[1]}))
            rows = rows.order_by(f"-{field}", "-id")
        elif direction == "prev":  # newer than the first row shown, read upwards then turned round
            rows = queryset.filter(Q(**{f"{field}__gt": after[0]}) | Q(**{field: after[0], "id__gt": after[1]}))
            rows = rows.order_by(field, "id")
        else:
            rows = queryset.order_by(f"-{field}", "-id")
        page = list(rows[: self.size + 1])
        more = len(page) > self.size
        page = page[: self.size]
        if direction == "prev":
            page.reverse()
        self.has_next = more if direction != "prev" else True
        self.has_previous = direction == "next" or (direction == "prev" and more)
        self.page = page
        return page

    def get_paginated_response(self, data) -> Response:
        return Response({"next": self._link("next", self.page[-1]) if self.has_next and self.page else None,
                         "previous": self._link("prev", self.page[0]) if self.has_previous and self.page else None,
                         "results": data})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        link = {"type": "string", "nullable": True, "format": "uri"}
        return {"type": "object", "required": ["results"],
                "properties": {"next": link, "previous": link, "results": schema}}

    def get_schema_operation_parameters(self, view) -> list[dict]:
        return [
            {"name": "cursor", "required": False, "in": "query", "schema": {"type": "string"},
             "description": "the `next` or `previous` link's cursor"},
            {"name": "page_size", "required": False, "in": "query",
             "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size},
             "description": f"rows per page (default {self.page_size}, at most {self.max_page_size})"},
        ]

    def _page_size(self, request) -> int:
        raw = request.query_params.get("page_size")
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if size < 1:
            raise serializers.ValidationError({"page_size": ["a whole number of at least 1"]})
        return min(size, self.max_page_size)

    def _cursor(self, request) -> tuple[str, tuple[datetime, UUID] | None]:
        raw = request.query_params.get("cursor")
        if not raw:
            return "", None
        try:
            direction, when, pk = json.loads(base64.urlsafe_b64decode(raw.encode()))
            if direction not in ("next", "prev"):
                raise ValueError(direction)
            return direction, (datetime.fromisoformat(when), UUID(pk))
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
            raise serializers.ValidationError({"cursor": ["not a cursor this list gave out"]}) from None

    def _link(self, direction: str, row) -> str:
        token = json.dumps([direction, getattr(row, self.time_field).isoformat(), str(row.pk)])
        params = {**self.request.query_params.dict(),
                  "cursor": base64.urlsafe_b64encode(token.encode()).decode()}
        return self.request.build_absolute_uri(self.request.path) + "?" + urlencode(params)
