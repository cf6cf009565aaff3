from django.apps import AppConfig


class MemoryappConfig(AppConfig):
    name = "memoryapp"
    default_auto_field = "django.db.models.BigAutoField"
