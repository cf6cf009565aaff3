import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
application = get_wsgi_application()

from memoryapp import embeddings  # noqa: E402  (after Django is set up)

embeddings.load_in_background()  # searches and ingests embed: not the first request's wait
