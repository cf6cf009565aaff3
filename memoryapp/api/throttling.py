"""The API rate limit: requests per agent key (or per logged-in user) in a window, counted in Redis."""

from __future__ import annotations

from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle


class PrincipalRateThrottle(SimpleRateThrottle):
    """At most `num_requests` per `duration` seconds per principal, in a fixed window that starts with
    the principal's first request. The count is one Redis counter changed only by INCR, so concurrent
    requests each get their own number and exactly `num_requests` pass: DRF's own throttle reads a
    history list, appends and writes it back, and concurrent requests overwrote each other's
    entries (1,400 concurrent requests passed a limit of 1,200 a minute without one 429).

    Fails open when Redis is down, so that reads keep working without it."""

    scope = "principal"

    def get_cache_key(self, request, view):
        if not request.user or not request.user.is_authenticated:
            ident = self.get_ident(request)
        else:
            ident = f"{type(request.user).__name__}:{request.user.pk}"
        return cache.make_key(f"throttle:{self.scope}:{ident}")

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        try:
            count, seconds_left = self._count(self.key)
        except Exception:  # redis-py raises ConnectionError and TimeoutError subclasses
            return True
        self.seconds_left = seconds_left
        return count <= self.num_requests

    def _count(self, key: str) -> tuple[int, int]:
        """This request's number in the current window, and the seconds until the window ends."""
        client = cache._cache.get_client(key, write=True)  # the cache's own pool, timeouts and server
        with client.pipeline(transaction=True) as pipe:  # MULTI/EXEC: no other command runs in between
            pipe.set(key, 0, ex=self.duration, nx=True)  # opens a window when there is none
            pipe.incr(key)
            pipe.ttl(key)
            _, count, seconds_left = pipe.execute()
        if seconds_left < 0:
            # The window ran out between SET and INCR, and INCR started a counter with no expiry:
            # give it one, or this principal would stay refused for ever.
            client.expire(key, self.duration)
            seconds_left = self.duration
        return count, seconds_left

    def wait(self):
        return max(getattr(self, "seconds_left", self.duration), 1)
