from django.apps import AppConfig


class MemoryappConfig(AppConfig):
    name = "memoryapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from memoryapp.api import schema  # noqa: F401  (registers the agent key's OpenAPI security scheme)
