from rest_framework.throttling import SimpleRateThrottle


class PrincipalRateThrottle(SimpleRateThrottle):
    """Requests per agent key (or per logged-in user); fails open when the cache is down so that
    reads keep working without Redis."""

    scope = "principal"

    def get_cache_key(self, request, view):
        if not request.user or not request.user.is_authenticated:
            return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
        return self.cache_format % {"scope": self.scope, "ident": f"{type(request.user).__name__}:{request.user.pk}"}

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception:  # redis-py raises ConnectionError and TimeoutError subclasses
            return True
