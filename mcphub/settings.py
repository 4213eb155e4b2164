"""MCP Hub settings, read from the environment (and an optional `.env` file).

Two shapes from one module:
- embedded default (no DATABASE_URL, no REDIS_URL): SQLite under MCPHUB_DATA_DIR, in-memory
  channel layer, local-memory cache, Celery tasks run in-process, the MCP pool in-process;
- production: Postgres from DATABASE_URL, Redis (channel layer, cache, Celery broker) from REDIS_URL.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of a `.env` file; the real environment always wins over it."""
    if not path.is_file():
        return {}
    pairs = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip().strip("'\"")
    return pairs


_DOTENV = _read_dotenv(Path(os.environ.get("MCPHUB_ENV_FILE", BASE_DIR / ".env")))


def envstr(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name, _DOTENV.get(name))
    return default if value in (None, "") else value


def envbool(name: str, default: bool) -> bool:
    value = envstr(name)
    if value is None:
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")


def envint(name: str, default: int) -> int:
    value = envstr(name)
    try:
        return default if value is None else int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in (envstr(name) or default).split(",") if item.strip()]


def required_secret(name: str, *, debug_fallback: str) -> str:
    """A secret that must be set in production; DEBUG runs get a fixed, clearly-insecure one."""
    value = envstr(name)
    if value:
        return value
    if DEBUG:
        return debug_fallback
    raise ImproperlyConfigured(
        f"{name} is not set. Set it in the environment or .env "
        f"(`./hub run` writes a fresh .env on first start), or set MCPHUB_DEBUG=true for development."
    )


DEBUG = envbool("MCPHUB_DEBUG", False)
SECRET_KEY = required_secret("SECRET_KEY", debug_fallback="insecure-debug-only-secret-key")
# Fernet keys, newest first: the first encrypts, all decrypt (see README "Rotating the encryption key").
MCPHUB_ENCRYPTION_KEYS = envlist(
    "MCPHUB_ENCRYPTION_KEYS",
    required_secret(
        "MCPHUB_ENCRYPTION_KEYS", debug_fallback="ZGVidWctb25seS1lbmNyeXB0aW9uLWtleS0zMmJ5dGU="
    ),
)

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")
DATA_DIR = Path(envstr("MCPHUB_DATA_DIR", str(BASE_DIR / "data"))).resolve()
# Unset: every URL the hub shows is derived from the request (apps/core/public_url.py).
SITE_URL = envstr("SITE_URL", "").rstrip("/")


INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "channels",
    "apps.core",
    "apps.accounts",
    "apps.catalog",
    "apps.connections",
    "apps.credentials",
    "apps.toolsets",
    "apps.gateway",
    "apps.discovery",
    "apps.llm",
    "apps.chat",
    "oauth2_provider",
    "apps.oauth",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "apps.web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "apps.core.nul.RejectNulMiddleware",
    "apps.core.public_url.PublicUrlMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.core.outage.OutageMiddleware",
]

ROOT_URLCONF = "mcphub.urls"
ASGI_APPLICATION = "mcphub.asgi.application"
WSGI_APPLICATION = "mcphub.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

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
            ],
        },
    },
]

# --- Database: Postgres when DATABASE_URL is set, else SQLite in the data directory.
DATABASE_URL = envstr("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=600)}
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # A connection pool per process (psycopg_pool), not persistent connections: under Django's
        # own ASGI handler every request ran on a thread of its own, so a persistent connection was
        # never reused (each API request connected anew, ~5 ms) and a hundred concurrent requests
        # opened a hundred connections ("too many clients"). Threads that keep a connection (the
        # sockets' and the chat loop's database threads) hold one of the pool's; Django's request
        # threads (mcphub/django_handler.py) return theirs after each request.
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        # CONN_HEALTH_CHECKS: the pool tests a connection as it hands it out (psycopg_pool's
        # check), so one that Postgres closed (an operator's pg_terminate_backend, a restart, a
        # failover) is replaced instead of failing every later request of the process holding it.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": envint("MCPHUB_DB_POOL_SIZE", 40),
            "timeout": 20,
        }
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        # As the embedded default below (the test hubs reach SQLite by URL): writers wait for the
        # lock instead of failing at once when a read transaction would have to upgrade.
        DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    # One test database per test run, so concurrent runs on one machine never trample each other.
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "mcphub.sqlite3",
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
            # A file, not memory, so the hub processes that tests start can share the test database.
            "TEST": {"NAME": DATA_DIR / f"test-{os.getpid()}.sqlite3"},
        }
    }

# --- Redis: channel layer, cache and Celery broker; absent means the embedded default.
REDIS_URL = envstr("REDIS_URL")
# redis-py 8 defaults socket_timeout to 5 s, which breaks idle blocking reads: set it explicitly.
REDIS_SOCKET_TIMEOUT = None
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "apps.core.channel_layer.RedisPubSubChannelLayer",  # channels_redis, reading at once
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": REDIS_SOCKET_TIMEOUT}]},
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "apps.core.cache.RedisCache",  # Django's, one connection pool per process
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "mcphub",
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# A host in the memory URL, or kombu warns "No hostname was supplied" at the first task.
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
# kombu's Redis transport with one client per channel, not one built per task sent or received
# (apps/core/broker.py); `rediss://` and Sentinel URLs keep kombu's own transport for their scheme.
CELERY_BROKER_TRANSPORT = (
    "apps.core.broker:Transport" if (REDIS_URL or "").startswith("redis://") else None
)
# Embedded default: tasks run in-process, so one web process is the whole hub.
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
# One result backend for the process, not one per thread: under ASGI every request runs on a new
# thread, and `delay()` touches the backend, so each request that enqueued a task built a Redis
# client (reading redis-py's package metadata from disk) — ~12% of a POST /api/runs/. The Redis
# backend's client and connection pool are thread-safe.
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_BROKER_POOL_LIMIT = envint("CELERY_BROKER_POOL_LIMIT", 64)
# Celery 6's default, said now (Celery 5 warns at every broker reconnect until it is set): it only
# cancels tasks acknowledged late, and the hub has none.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_TASK_DEFAULT_QUEUE = "celery"
# Threads, not prefork: the MCP pool runs on a thread of the worker process, which must never fork.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = envint("CELERY_WORKER_CONCURRENCY", 4)
CELERY_TASK_ROUTES = {"connections.*": {"queue": "mcp"}, "catalog.*": {"queue": "mcp"}}

# --- Static files (served by WhiteNoise, also under the ASGI server).
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# The endpoint admin posts ~5 fields per enabled tool; Django's default (1,000) stops at ~200 tools.
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.api.authentication.HubTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "apps.api.pagination.HubPagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["apps.api.throttling.TokenRateThrottle"],
    # Per token (else per user, else per address); generous: scripts toggle tools in bursts.
    "DEFAULT_THROTTLE_RATES": {"token": envstr("MCPHUB_API_RATE", "1200/min")},
}

SPECTACULAR_SETTINGS = {
    "TITLE": "MCP Hub API",
    "DESCRIPTION": "Servers, tools, endpoints, presets, tokens and teams of an MCP Hub.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/",
    # Swagger UI served from our own static files (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "EndpointModeEnum": "apps.toolsets.models.Endpoint.Mode",
        "LoadModeEnum": [("replace", "replace"), ("merge", "merge")],
        "ServerVisibilityEnum": "apps.catalog.models.McpServer.Visibility",
        "PresetVisibilityEnum": "apps.toolsets.models.Preset.Visibility",
        "RunStatusEnum": "apps.chat.runs.models.Run.Status",
        "ServerStatusEnum": "apps.catalog.models.McpServer.Status",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # No raw access token in any log line (URLs with /mcp/t/<token>/, headers, tracebacks).
    "filters": {
        "redact_tokens": {"()": "apps.accounts.log_filters.RedactTokensFilter"},
        "without_traceback": {"()": "apps.web.errors.WithoutTraceback"},
    },
    # The level is the handler's too: a library that sets its own logger to DEBUG when imported
    # (bm25s does, after this config is applied) still prints nothing below LOG_LEVEL.
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["redact_tokens"],
            "level": envstr("LOG_LEVEL", "INFO"),
        }
    },
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    # A line per task run ("Task … succeeded") or per HTTP request of the LLM/MCP clients ("HTTP
    # Request: POST …") drowns the log at INFO; failures are still logged. The web server's lines
    # (uvicorn.access, one a request but none on /mcp/ unless MCPHUB_MCP_ACCESS_LOG; uvicorn.error:
    # start, WebSocket handshakes, shutdown) go through the same redacting handler.
    "loggers": {
        "celery.app.trace": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # "AXES: BEGIN …" at every start; lockouts are warnings
        "django.security.RequestDataTooBig": {
            "filters": ["without_traceback"]
        },  # the 413 page says why
    },
}

# --- Hub behaviour.
MCPHUB_DEFAULT_TOKEN_BUDGET = envint("MCPHUB_DEFAULT_TOKEN_BUDGET", 20000)
MCPHUB_DEFAULT_SERVER_TIMEOUT = envint("MCPHUB_DEFAULT_SERVER_TIMEOUT", 30)
MCP_JSON_PATH = envstr("MCP_JSON_PATH")
MCPHUB_USERS_MAY_ADD_SERVERS = envbool(
    "MCPHUB_USERS_MAY_ADD_SERVERS", False
)  # remote servers private to their owner
# Hosts (`.domain` for a domain and its subdomains) and networks that servers and LLM providers
# users add, and URLs backends name, may reach besides public addresses (apps/core/outbound.py).
MCPHUB_OUTBOUND_ALLOW = envlist("MCPHUB_OUTBOUND_ALLOW")

# --- MCP gateway.
MCPHUB_SESSION_TTL = envint("MCPHUB_SESSION_TTL", 24 * 3600)  # seconds an idle MCP session lives
MCPHUB_RATE_LIMIT_PER_MINUTE = envint("MCPHUB_RATE_LIMIT_PER_MINUTE", 6000)  # per token; 0 = off
MCPHUB_MAX_REQUEST_BYTES = envint("MCPHUB_MAX_REQUEST_BYTES", 4 * 1024 * 1024)
# Slow or lying clients (mcphub/server_guards.py): seconds for a whole request to arrive (408
# beyond; 0 = off), and requests one address may have still arriving after half that (429 beyond;
# 0 = off); requests being served and open streams never count.
MCPHUB_REQUEST_READ_TIMEOUT = envint("MCPHUB_REQUEST_READ_TIMEOUT", 10)
MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT = envint("MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT", 16)
# The server's access log line for each request to an MCP endpoint (/mcp/...): off unless asked
# (every tool call is in the call log already; the line cost ~1% of the web process's CPU a call).
MCPHUB_MCP_ACCESS_LOG = envbool("MCPHUB_MCP_ACCESS_LOG", False)
MCPHUB_LIST_PAGE_SIZE = envint("MCPHUB_LIST_PAGE_SIZE", 1000)
# Threads a web process runs Django requests (pages, REST API) on at once (mcphub/django_handler.py).
MCPHUB_WEB_THREADS = envint("MCPHUB_WEB_THREADS", 16)
MCPHUB_LOG_TOOL_ARGUMENTS = envbool("MCPHUB_LOG_TOOL_ARGUMENTS", False)
# Dynamic endpoints' tool search (apps/discovery/retrieval.py): auto = hybrid when the optional
# embedding model is installed, else bm25; or bm25, embedding, hybrid.
MCPHUB_DISCOVERY_METHOD = envstr("MCPHUB_DISCOVERY_METHOD", "auto")
# Threads a web process searches in (query encoding is CPU): by default one core is left for
# the event loop, so searching never slows the process's other requests much.
MCPHUB_SEARCH_THREADS = envint("MCPHUB_SEARCH_THREADS", max(1, (os.cpu_count() or 2) - 1))
# Encoder processes per web (or worker) process: the embedding model runs there, so encoding
# never holds the web process's interpreter lock (each ~150 MB, started on first search). 0 =
# encode in the search threads (the event loop then shares the lock with them).
MCPHUB_ENCODER_PROCESSES = envint("MCPHUB_ENCODER_PROCESSES", 1)

# --- Metrics (`/metrics`, Prometheus text; see apps/core/metrics.py and docs/metrics.md). Every
# web and worker process of one hub writes its counters to files in one directory (prometheus
# client's multiprocess mode), which a scrape of any web process merges. Staff tokens and logged-in
# staff may scrape; so may any address in these networks (comma-separated CIDRs, e.g. 10.0.0.0/8).
MCPHUB_METRICS_DIR = Path(envstr("PROMETHEUS_MULTIPROC_DIR", str(DATA_DIR / "metrics"))).resolve()
MCPHUB_METRICS_ALLOW_CIDRS = envlist("MCPHUB_METRICS_ALLOW_CIDRS")
try:
    MCPHUB_METRICS_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={MCPHUB_METRICS_DIR} cannot be created ({exc}): point it at a writable directory"
    ) from None
# prometheus_client picks its value store when first imported: this must come before that.
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(MCPHUB_METRICS_DIR)

# Chat: model/tool rounds per turn before the hub stops the turn; tool results are cut to this many
# characters when sent to the model (the whole result is kept and shown).
MCPHUB_CHAT_MAX_ROUNDS = envint("MCPHUB_CHAT_MAX_ROUNDS", 10)
MCPHUB_CHAT_TOOL_RESULT_CHARS = envint("MCPHUB_CHAT_TOOL_RESULT_CHARS", 16000)
# LLM providers: seconds a chat turn or run waits, in all, for a local server's model to load (llama.cpp
# 503 "Loading model", LM Studio, a busy Ollama) before it reports; 0 retries once like any failure.
MCPHUB_LLM_LOADING_WAIT = envint("MCPHUB_LLM_LOADING_WAIT", 60)
# Seconds a run (a chat turn) waits out a provider outage — connection refused, 5xx, 429 — asking
# again with backoff and jitter and saying "Waiting for the model provider" with the last error,
# before it fails (a failed run can be resumed); 0: one retry, as before.
MCPHUB_RUN_PROVIDER_WAIT = envint("MCPHUB_RUN_PROVIDER_WAIT", 600)
MCPHUB_CHAT_PROVIDER_WAIT = envint("MCPHUB_CHAT_PROVIDER_WAIT", 30)
# Seconds a backend's question to a gateway client that cannot answer it (elicitation; sampling on
# an endpoint set to `ask`) waits on the user's open hub pages (apps/chat/asks.py) for an answer.
MCPHUB_PAGE_ASK_SECONDS = envint("MCPHUB_PAGE_ASK_SECONDS", 120)
# Autonomous runs (apps/chat/runs): default round limit, the context kept under this many
# characters (the latest MCPHUB_RUN_KEEP_ROUNDS rounds whole), and how a lost worker is noticed.
MCPHUB_RUN_MAX_ROUNDS = envint("MCPHUB_RUN_MAX_ROUNDS", 10000)
MCPHUB_RUN_CONTEXT_CHARS = envint("MCPHUB_RUN_CONTEXT_CHARS", 60000)
MCPHUB_RUN_KEEP_ROUNDS = envint("MCPHUB_RUN_KEEP_ROUNDS", 4)
# Rounds a run may spend asking the model to go on with an answer cut at its output limit; past
# them the run ends `incomplete` with what it has.
MCPHUB_RUN_CONTINUATIONS = envint("MCPHUB_RUN_CONTINUATIONS", 3)
# Leases (apps/chat/lease.py): a process renews its runs' and chat turns' leases every HEARTBEAT s;
# a live one takes over work whose lease is STALE s old (its process died) and continues it, at most
# MAX_RECOVERIES times without a completed round; a stopping process drains for up to DRAIN s.
MCPHUB_RUN_HEARTBEAT_SECONDS = envint("MCPHUB_RUN_HEARTBEAT_SECONDS", 1)
MCPHUB_RUN_STALE_SECONDS = envint("MCPHUB_RUN_STALE_SECONDS", 3)
MCPHUB_RUN_MAX_RECOVERIES = envint("MCPHUB_RUN_MAX_RECOVERIES", 3)
MCPHUB_RUN_DRAIN_SECONDS = envint("MCPHUB_RUN_DRAIN_SECONDS", 25)
# false: this process keeps its own leases but takes over no lost work (the tests' session hub,
# which shares its database with the hubs that tests break).
MCPHUB_RUN_TAKE_OVER = envbool("MCPHUB_RUN_TAKE_OVER", True)
# MCP tasks (2025-11-25; apps/gateway/mcp_tasks.py): how long a task is kept when its client asks
# for no ttl, the longest ttl granted (milliseconds), and tasks per `tasks/list` page.
MCPHUB_TASK_TTL_MS = envint("MCPHUB_TASK_TTL_MS", 24 * 3600 * 1000)
MCPHUB_TASK_MAX_TTL_MS = envint("MCPHUB_TASK_MAX_TTL_MS", 7 * 24 * 3600 * 1000)
MCPHUB_TASK_PAGE_SIZE = envint("MCPHUB_TASK_PAGE_SIZE", 100)

# --- MCP connection pool (keys: apps.connections.pool.PoolOptions). With REDIS_URL the pool lives in
# the Celery workers, whose own listener re-discovers on a backend's list_changed; embedded, the
# in-process pool calls this hook instead.
MCPHUB_POOL = {
    # Embedded: the gateway relays resources/updated, then hands the rest to the catalog (list_changed).
    "on_notification": "apps.gateway.subscriptions.on_backend_notification",
    # Requests in flight to one backend server; past it calls fail at once with a clear error.
    "max_inflight_per_server": envint("MCPHUB_MAX_INFLIGHT_PER_SERVER", 512),
    # Per-user connections (stdio children) one shared server with ${user:NAME} variables may hold
    # at once; past it the least recently used idle one is closed.
    "max_partitions_per_server": envint("MCPHUB_MAX_USER_CONNECTIONS_PER_SERVER", 64),
    # Seconds a backend may take to start and answer initialize.
    "connect_timeout": envint("MCPHUB_CONNECT_TIMEOUT", 30),
    # A tools/call goes to its backend as one plain POST (Streamable HTTP) or one line (stdio) after the
    # SDK's handshake (~1.5 ms / ~0.2 ms less hub CPU per call); false: every request via the SDK session.
    "lean_requests": envbool("MCPHUB_LEAN_REQUESTS", True),
    # With REDIS_URL: where each pool worker takes web processes' direct links for tool calls
    # ("host:port", port 0 for any free one; empty: calls go through Redis only, ~0.4 ms more each),
    # and the host web processes reach it at (default: the listen host, or with 0.0.0.0 this host's
    # address on its route to Redis). apps/connections/link.py.
    "listen": envstr("MCPHUB_POOL_LISTEN", "127.0.0.1:0"),
    "advertise": envstr("MCPHUB_POOL_ADVERTISE", ""),
}

# --- Health checks, re-discovery and the watched .mcp.json (Celery beat; see apps/catalog/operations.py).
MCPHUB_HEALTH_INTERVAL = envint("MCPHUB_HEALTH_INTERVAL", 60)  # seconds between health checks
MCPHUB_HEALTH_TIMEOUT = envint("MCPHUB_HEALTH_TIMEOUT", 10)  # seconds a health ping may take
# Whose values discovery and health checks of a server with user variables or OAuth use: the
# catalog's operations ask credentials (a layer above them, DESIGN.md §4) through this name.
MCPHUB_OPERATIONAL_SPEC = "apps.credentials.selectors.spec_for_operation"
# Upstream OAuth: refresh a user's backend access token this many seconds before it expires
# (or a third of its lifetime, if shorter), so a call never carries an expired one.
MCPHUB_UPSTREAM_OAUTH_REFRESH_MARGIN = envint("MCPHUB_UPSTREAM_OAUTH_REFRESH_MARGIN", 120)
MCPHUB_HEALTH_SLOW_MS = envint("MCPHUB_HEALTH_SLOW_MS", 2000)  # a slower ping means `degraded`
MCPHUB_DISCOVERY_INTERVAL = envint(
    "MCPHUB_DISCOVERY_INTERVAL", 60
)  # minutes between re-discoveries
MCPHUB_WATCH_MCP_JSON = envbool(
    "MCPHUB_WATCH_MCP_JSON", False
)  # re-import MCP_JSON_PATH when it changes
MCPHUB_WATCH_INTERVAL = envint("MCPHUB_WATCH_INTERVAL", 5)  # seconds between looks at that file
CELERY_BEAT_SCHEDULE = {
    "catalog-health": {
        "task": "catalog.check_health_all",
        "schedule": float(MCPHUB_HEALTH_INTERVAL),
    },
    "catalog-rediscovery": {
        "task": "catalog.discover_all",
        "schedule": MCPHUB_DISCOVERY_INTERVAL * 60.0,
    },
    "runs-sweep-lost": {"task": "chat.sweep_lost_runs", "schedule": 15.0},
    "chat-expire-lost-turns": {"task": "chat.expire_lost_turns", "schedule": 60.0},
    "oauth-clear-expired": {"task": "oauth.clear_expired", "schedule": 3600.0},
}
# Embedded default (no REDIS_URL, so no `celery beat`): the web process runs this schedule itself.
MCPHUB_EMBEDDED_BEAT = envbool("MCPHUB_EMBEDDED_BEAT", True)
if MCPHUB_WATCH_MCP_JSON and MCP_JSON_PATH:
    CELERY_BEAT_SCHEDULE["catalog-watch-mcp-json"] = {
        "task": "catalog.watch_mcp_json",
        "schedule": float(MCPHUB_WATCH_INTERVAL),
    }

# --- Security: sign-in lockout (django-axes), response headers, HTTPS, audit trail.
INSTALLED_APPS += [
    "axes",
    "auditlog",
    "apps.audit",
]  # auditlog before apps.audit: ours replaces its admin
# Reverse proxies in front of the hub that each append to X-Forwarded-For: the client address every
# per-client limit counts by (apps/core/client_address.py). 0: the socket's address, the header ignored.
MCPHUB_TRUSTED_PROXIES = envint("MCPHUB_TRUSTED_PROXIES", 0)
# Behind them, the host clients asked for is the forwarded one (still checked against ALLOWED_HOSTS):
# the URLs the hub shows use it (apps/core/public_url.py).
USE_X_FORWARDED_HOST = MCPHUB_TRUSTED_PROXIES > 0
# django-axes counts failed sign-ins per account from one address, and per address with a limit
# ten times higher (apps/accounts/lockout.py): nobody locks anyone out from elsewhere. A success
# resets its own count; staff unlock early by deleting the access attempts in the admin.
AUTHENTICATION_BACKENDS = [
    "apps.accounts.backends.SignInLockoutBackend",
    "apps.accounts.backends.PasswordBackend",  # Django's, refusing passwords in SSO-only mode
]
AXES_HANDLER = "apps.accounts.lockout.SignInLockoutHandler"
AXES_CLIENT_IP_CALLABLE = "apps.core.client_address.request_client_address"
AXES_FAILURE_LIMIT = envint("MCPHUB_SIGNIN_FAILURE_LIMIT", 5)
MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT = envint(
    "MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT", 10 * AXES_FAILURE_LIMIT
)
AXES_COOLOFF_TIME = timedelta(minutes=envint("MCPHUB_SIGNIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "web/locked_out.html"
# --- Single sign-on with OpenID Connect providers (apps/accounts/sso; README "Single sign-on").
# django-allauth runs the flow (discovery, code + PKCE, state); the hub adds the nonce, always
# checks the ID token's signature, and decides who the person is (apps/accounts/sso/accounts.py).
# Providers come from here and from the admin (Accounts → SSO providers), several at once:
# MCPHUB_SSO_PROVIDERS=keycloak,google and for each MCPHUB_SSO_<ID>_{ISSUER,CLIENT_ID,CLIENT_SECRET}
# (+ optional _NAME, _SCOPES).
MCPHUB_SSO_PROVIDERS = []
for _slug in envlist("MCPHUB_SSO_PROVIDERS"):
    _env = f"MCPHUB_SSO_{_slug.upper().replace('-', '_')}_"
    _missing = [k for k in ("ISSUER", "CLIENT_ID") if not envstr(_env + k)]
    if _missing:
        raise ImproperlyConfigured(
            f"SSO provider {_slug!r} needs {', '.join(_env + k for k in _missing)}."
        )
    MCPHUB_SSO_PROVIDERS.append(
        {
            "slug": _slug,
            "name": envstr(_env + "NAME", _slug.title()),
            "issuer": envstr(_env + "ISSUER"),
            "client_id": envstr(_env + "CLIENT_ID"),
            "client_secret": envstr(_env + "CLIENT_SECRET", ""),
            "scopes": envstr(_env + "SCOPES", "openid profile email"),
        }
    )
# The claims a new account's username and email come from; the groups claim and what it maps to:
# MCPHUB_SSO_TEAMS="hub-eng=Engineering,hub-eng-leads=Engineering:admin" (teams made as needed;
# memberships in those teams follow the provider at every sign-in), and the groups whose members
# are staff / superusers (both follow the provider too, when set).
MCPHUB_SSO_USERNAME_CLAIM = envstr("MCPHUB_SSO_USERNAME_CLAIM", "preferred_username")
MCPHUB_SSO_EMAIL_CLAIM = envstr("MCPHUB_SSO_EMAIL_CLAIM", "email")
MCPHUB_SSO_GROUPS_CLAIM = envstr("MCPHUB_SSO_GROUPS_CLAIM", "groups")
MCPHUB_SSO_TEAMS = envlist("MCPHUB_SSO_TEAMS")
MCPHUB_SSO_STAFF_GROUPS = envlist("MCPHUB_SSO_STAFF_GROUPS")
MCPHUB_SSO_SUPERUSER_GROUPS = envlist("MCPHUB_SSO_SUPERUSER_GROUPS")
# Only people whose verified email is in these domains get in (e.g. Google: your Workspace domain).
MCPHUB_SSO_EMAIL_DOMAINS = envlist("MCPHUB_SSO_EMAIL_DOMAINS")
# SSO only: no password sign-in (page, admin) except for these break-glass usernames.
MCPHUB_SSO_ONLY = envbool("MCPHUB_SSO_ONLY", False)
MCPHUB_SSO_BREAK_GLASS = envlist("MCPHUB_SSO_BREAK_GLASS")
# GitHub, which has OAuth apps rather than OpenID Connect: MCPHUB_SSO_GITHUB_CLIENT_ID and
# _CLIENT_SECRET (+ MCPHUB_SSO_GITHUB_URL for GitHub Enterprise Server). It sends no groups.
MCPHUB_SSO_GITHUB = {
    "client_id": envstr("MCPHUB_SSO_GITHUB_CLIENT_ID", ""),
    "client_secret": envstr("MCPHUB_SSO_GITHUB_CLIENT_SECRET", ""),
    "name": envstr("MCPHUB_SSO_GITHUB_NAME", "GitHub"),
}
INSTALLED_APPS += [
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.github",
]
SOCIALACCOUNT_QUERY_EMAIL = True  # GitHub: the verified emails, from /user/emails
SOCIALACCOUNT_PROVIDERS = {"github": {}}
if envstr("MCPHUB_SSO_GITHUB_URL"):
    SOCIALACCOUNT_PROVIDERS["github"]["GITHUB_URL"] = envstr("MCPHUB_SSO_GITHUB_URL")
_after_auth = MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1
MIDDLEWARE[_after_auth:_after_auth] = [
    "allauth.account.middleware.AccountMiddleware",
    "apps.accounts.sso.session.SsoSessionCheck",
]
# Seconds between the checks of an SSO session with its provider (apps/accounts/sso/session.py).
MCPHUB_SSO_CHECK_SECONDS = envint("MCPHUB_SSO_CHECK_SECONDS", 300)
# Signing out of the hub also signs out at the provider (its end_session_endpoint), which must
# accept <hub>/login/ as a post-logout redirect URI.
MCPHUB_SSO_SIGN_OUT_AT_PROVIDER = envbool("MCPHUB_SSO_SIGN_OUT_AT_PROVIDER", True)
SOCIALACCOUNT_ADAPTER = "apps.accounts.sso.adapter.SsoAdapter"
SOCIALACCOUNT_OPENID_CONNECT_URL_PREFIX = "oidc"
SOCIALACCOUNT_STORE_TOKENS = False  # the hub keeps no provider tokens
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # linking by email is decided by the hub, verified only
ACCOUNT_EMAIL_VERIFICATION = "none"  # the provider vouches for its emails (email_verified)
# The pages' CSP: scripts and styles from our own files only (inline style attributes allowed for
# the budget bars), never framed; the admin and API docs live under the same policy.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
MIDDLEWARE += [
    "csp.middleware.CSPMiddleware",
    "apps.audit.context.AuditMiddleware",  # who changed what, from where (admin, pages, API)
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]
AUDITLOG_DISABLE_ON_RAW_SAVE = True  # loading fixtures is not a change anyone made
AUDITLOG_MASK_CALLABLE = (
    "apps.audit.registry.hide_secret"  # a secret is "[secret]", never half of it
)
# Apps register their models with apps.audit.registry.register() in ready(); an app that must not
# import apps.audit (llm depends on core only), or whose owner has not hooked in yet, is listed here.
AUDITLOG_INCLUDE_TRACKING_MODELS = (
    {"model": "llm.Provider", "mask_fields": ["api_key"], "exclude_fields": ["updated_at"]},
    "discovery.ActivationPattern",
)
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Served over HTTPS (by a TLS-terminating proxy that sets X-Forwarded-Proto): secure cookies, HSTS
# and a redirect to https (not for /health, which container health checks reach over plain HTTP).
MCPHUB_HTTPS = envbool("MCPHUB_HTTPS", SITE_URL.startswith("https://"))
SILENCED_SYSTEM_CHECKS: list[str] = []
if MCPHUB_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = envbool("MCPHUB_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^health$"]
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("MCPHUB_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("MCPHUB_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("MCPHUB_HSTS_PRELOAD", False)
    # Preloading binds the whole domain into browsers for good: an operator's choice, not our default.
    SILENCED_SYSTEM_CHECKS += [] if SECURE_HSTS_PRELOAD else ["security.W021"]

# --- OAuth 2.1 for the MCP endpoints (apps/oauth on django-oauth-toolkit): hosted clients register
# themselves (RFC 7591) or name a Client ID Metadata Document, the user consents once per endpoint,
# and the access token's audience (RFC 8707) is that one endpoint.
MCPHUB_OAUTH_ACCESS_TOKEN_SECONDS = envint("MCPHUB_OAUTH_ACCESS_TOKEN_SECONDS", 3600)
MCPHUB_OAUTH_REFRESH_TOKEN_DAYS = envint("MCPHUB_OAUTH_REFRESH_TOKEN_DAYS", 30)
MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR = envint(
    "MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR", 30
)  # per client address
# Client ID Metadata Documents are fetched over https from public addresses only; development and
# tests may also allow http on loopback.
MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP = envbool("MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP", DEBUG)
# Native apps' private-use redirect schemes (RFC 8252 §7.1) accepted besides https and loopback http.
MCPHUB_OAUTH_NATIVE_REDIRECT_SCHEMES = envlist("MCPHUB_OAUTH_NATIVE_REDIRECT_SCHEMES", "cursor")
# The toolkit warns that http redirect URIs are allowed: the hub allows them on loopback only
# (native apps, RFC 8252 §7.3), which apps/oauth/redirects.py enforces for every client.
SILENCED_SYSTEM_CHECKS += ["oauth2_provider.W008"]
# The toolkit's own models (named so apps/oauth's foreign key can reference them in migrations).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Use the tools enabled on this endpoint"},
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,  # tokens stored as SHA-256 checksums only
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "ACCESS_TOKEN_GENERATOR": "apps.oauth.tokens.generate_access_token",
    "REFRESH_TOKEN_GENERATOR": "apps.oauth.tokens.generate_refresh_token",
    "ACCESS_TOKEN_EXPIRE_SECONDS": MCPHUB_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": MCPHUB_OAUTH_REFRESH_TOKEN_DAYS * 24 * 3600,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,  # a replayed old refresh token revokes the whole grant
    "REQUEST_APPROVAL_PROMPT": "force",
    # http only for loopback, and which native schemes: see apps/oauth/redirects.py
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", *MCPHUB_OAUTH_NATIVE_REDIRECT_SCHEMES],
    "OAUTH2_VALIDATOR_CLASS": "apps.oauth.validators.HubOAuth2Validator",
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_basic",
        "client_secret_post",
    ],
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "apps.oauth.cimd.HubMetadataFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": 5,
    "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "MCP Hub endpoint",
}
