from django.apps import AppConfig


class MemoryappConfig(AppConfig):
    name = "memoryapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import memoryapp.tasks  # noqa: F401  (registers the Celery tasks that services.jobs.task_named sends)
        from memoryapp import database_versions  # noqa: F401  (registers the pgvector check `migrate` runs)
        from memoryapp.api import schema  # noqa: F401  (registers the agent key's OpenAPI security scheme)
