"""Switchboard settings, read from the environment (and an optional `.env` file).

Every setting that differs between a laptop and production is listed in
`.env.example` and in the README's configuration table.
"""

import ipaddress
import json
import os
import secrets
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from callcenter.security import LOCAL_HOSTS, production_problems, refusal
from callcenter.sentry import init_sentry

PACKAGE_DIR = Path(__file__).resolve().parent
# Installed from the wheel, the pages' templates and static files are inside this package
# (pyproject.toml puts the checkout's top-level templates/ and static/ there); in a
# checkout they are beside it, at the top level.
INSTALLED = (PACKAGE_DIR / "templates").is_dir()
PAGES_DIR = PACKAGE_DIR if INSTALLED else PACKAGE_DIR.parent
# Where `var/` (the SQLite default, the collected static files) and `.env` are: the
# checkout, or for an installed copy the working directory (/opt/switchboard in the
# systemd units, docs/deploy.md).
BASE_DIR = Path.cwd() if INSTALLED else PACKAGE_DIR.parent


class _Env(environ.Env):
    """django-environ's Env, saying which setting is wrong when a value cannot be read as
    its type (a number, a list), rather than failing with a bare ValueError."""

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except ValueError as exc:
            kind = getattr(cast, "__name__", "the expected type")
            raise ImproperlyConfigured(f"{var}={self.ENVIRON.get(var, '')!r} is not a valid {kind} ({exc}).") from exc

    def seconds_or_off(self, var: str) -> float | None:
        """A number of seconds where empty (or unset, or 0) means off: None."""
        if not str(self.ENVIRON.get(var, "")).strip():
            return None
        return self.float(var) or None


env = _Env()
# SWITCHBOARD_ENV_FILE names another file to read, or none at all when empty; variables
# already in the environment win over the file.
ENV_FILE = os.environ.get("SWITCHBOARD_ENV_FILE", str(BASE_DIR / ".env"))
if ENV_FILE:
    environ.Env.read_env(ENV_FILE, overwrite=False)

# Fail closed: DEBUG is off unless asked for, and then the process refuses to start
# without a real SECRET_KEY and the host names it serves. `make run` writes a `.env`
# with DEBUG=true and a random key of its own for the laptop (callcenter/local_env.py).
DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=LOCAL_HOSTS if DEBUG else [])
if not DEBUG:
    if problems := production_problems(SECRET_KEY, ALLOWED_HOSTS):
        raise ImproperlyConfigured(refusal(problems))
elif not SECRET_KEY:
    # Local development without a key: one per process, never a known value (sessions
    # end when the server restarts; `make run` writes a lasting one into `.env`).
    SECRET_KEY = secrets.token_urlsafe(50)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "queues_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # With DEBUG off: static files, compressed and cached for ever (names carry a hash),
    # from the WSGI process itself (with it on, runserver and the tests serve them).
    *([] if DEBUG else ["whitenoise.middleware.WhiteNoiseMiddleware"]),
    # Per-route latency for /metrics: every request from here on (static files left out).
    "queues_app.figures.latency.RequestLatencyMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "queues_app.tracing.TraceIdMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "queues_app.http.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "queues_app.http.middleware.DynamoErrorMiddleware",
    "queues_app.http.middleware.ReadYourWritesMiddleware",
    # Last, as django-axes asks: answers a locked-out login with the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "callcenter.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [PAGES_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "queues_app.http.context_processors.roles",
                "queues_app.http.context_processors.centre_time",
            ],
        },
    },
]

WSGI_APPLICATION = "callcenter.wsgi.application"
ASGI_APPLICATION = "callcenter.asgi.application"

# Django's own database holds only users, groups and sessions; queues live in DynamoDB.
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'switchboard.sqlite3'}"),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [PAGES_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "var" / "staticfiles")
# With DEBUG off, `collectstatic` writes hashed names and gzip (brotli if installed)
# variants that WhiteNoise serves; with it on (the laptop, the tests) files are served
# as they are, no collectstatic needed.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Security settings that `manage.py check --deploy` asks for; each follows DEBUG so
# that the local server keeps working over plain HTTP.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# A load balancer's health checks reach the process over plain HTTP, without the proxy's
# X-Forwarded-Proto: they are answered, not redirected.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
# Subdomains and the browsers' preload list commit every host of the domain to HTTPS for
# a long time: only when asked for. The deploy checks that suggest them are silenced
# while they are off (a decision, not an oversight).
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SILENCED_SYSTEM_CHECKS = [
    check
    for check, asked in (("security.W005", SECURE_HSTS_INCLUDE_SUBDOMAINS), ("security.W021", SECURE_HSTS_PRELOAD))
    if not asked
]
# A TLS-terminating proxy's X-Forwarded-Proto (and, for the login throttle, the address
# it appends to X-Forwarded-For) are trusted only when it is said to be there.
BEHIND_TLS_PROXY = env.bool("BEHIND_TLS_PROXY", default=False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# A session lasts a shift, not two weeks.
SESSION_HOURS = env.float("SESSION_HOURS", default=12.0)
if SESSION_HOURS <= 0:
    raise ImproperlyConfigured(f"SESSION_HOURS must be a positive number of hours, not {SESSION_HOURS:g}.")
SESSION_COOKIE_AGE = max(60, round(SESSION_HOURS * 3600))

# Content-Security-Policy (Django's own middleware): only this site's scripts, styles,
# images and requests; no inline script or style, no eval, no framing. The templates
# keep none inline (htmx is configured through its meta tag, its indicator styles are
# in static/css), and the admin needs nothing more.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# --- logins: django-axes ----------------------------------------------------------
# LOGIN_FAILURE_LIMIT failed logins for one username from one address lock that pair
# out for LOGIN_LOCKOUT_MINUTES, on the site's login and the admin's alike (the right
# password included); a successful login clears the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "queues_app.http.logins.LocalPasswords",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15.0))
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME <= timedelta(0):
    raise ImproperlyConfigured("LOGIN_FAILURE_LIMIT and LOGIN_LOCKOUT_MINUTES must be positive.")
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# The lockout lasts its minutes from the failure that caused it; trying again while
# locked out does not make it longer.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "callcenter.security.lockout_response"
AXES_CLIENT_IP_CALLABLE = "callcenter.security.client_ip"

# --- single sign-on: OpenID Connect (queues_app/http/logins.py, mozilla-django-oidc) --------
# On when OIDC_RP_CLIENT_ID is set, with the provider's endpoints (its discovery document,
# `/.well-known/openid-configuration`, lists them). The role comes from the groups claim;
# someone in none of these groups is refused. LOCAL_LOGIN=false leaves the provider only.
LOCAL_LOGIN = env.bool("LOCAL_LOGIN", default=True)
OIDC_RP_CLIENT_ID = env.str("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_RP_CLIENT_SECRET", default="")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env.str("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env.str("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env.str("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_OP_LOGOUT_ENDPOINT = env.str("OIDC_OP_LOGOUT_ENDPOINT", default="")
OIDC_RP_SIGN_ALGO = env.str("OIDC_RP_SIGN_ALGO", default="RS256")
OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", default="openid email profile")
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
OIDC_USERNAME_CLAIM = env.str("OIDC_USERNAME_CLAIM", default="sub")
OIDC_SUPERVISOR_GROUPS = env.list("OIDC_SUPERVISOR_GROUPS", default=[])
OIDC_VIEWER_GROUPS = env.list("OIDC_VIEWER_GROUPS", default=[])
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="your identity provider")
OIDC_TIMEOUT = 10
OIDC_STORE_ID_TOKEN = True  # for the provider's logout (id_token_hint)
OIDC_OP_LOGOUT_URL_METHOD = "queues_app.http.logins.provider_logout_url"
LOGIN_REDIRECT_URL_FAILURE = "/login/"  # mozilla-django-oidc takes a path, not a URL name
if OIDC_RP_CLIENT_ID:
    _missing = [
        name
        for name in ("OIDC_OP_AUTHORIZATION_ENDPOINT", "OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT")
        if not globals()[name]
    ]
    if OIDC_RP_SIGN_ALGO.startswith(("RS", "ES")) and not OIDC_OP_JWKS_ENDPOINT:
        _missing.append("OIDC_OP_JWKS_ENDPOINT")
    if not (OIDC_SUPERVISOR_GROUPS or OIDC_VIEWER_GROUPS):
        _missing.append("OIDC_SUPERVISOR_GROUPS or OIDC_VIEWER_GROUPS")
    if _missing:
        raise ImproperlyConfigured(f"Single sign-on (OIDC_RP_CLIENT_ID) also needs {', '.join(_missing)}.")
    AUTHENTICATION_BACKENDS.append("queues_app.http.logins.ProviderGroups")
elif not LOCAL_LOGIN:
    raise ImproperlyConfigured("LOCAL_LOGIN=false needs single sign-on (OIDC_RP_CLIENT_ID and the OIDC_* settings).")

# --- DynamoDB -------------------------------------------------------------------
AWS_REGION = env.str("AWS_REGION", default="us-east-1")
# Empty means real AWS with the normal credential chain.
DYNAMODB_ENDPOINT_URL = env.str("DYNAMODB_ENDPOINT_URL", default="http://127.0.0.1:8421") or None
DYNAMODB_TABLE_PREFIX = env.str("DYNAMODB_TABLE_PREFIX", default="switchboard-")
DYNAMODB_CONNECT_TIMEOUT = env.float("DYNAMODB_CONNECT_TIMEOUT", default=2.0)
DYNAMODB_READ_TIMEOUT = env.float("DYNAMODB_READ_TIMEOUT", default=5.0)
DYNAMODB_MAX_ATTEMPTS = env.int("DYNAMODB_MAX_ATTEMPTS", default=4)

# Skill dimensions and their allowed values. A center adds a dimension here, e.g.
# SWITCHBOARD_SKILLS='{"language": ["English", "French"], "gender": ["F", "M", "X"], "tier": ["1", "2"]}'
SWITCHBOARD_SKILLS = json.loads(
    env.str(
        "SWITCHBOARD_SKILLS",
        default='{"language": ["English", "French", "Spanish"], "gender": ["F", "M", "X"]}',
    )
)

# The dimensions whose values the agent form gives a level, 1 to 5 (routing steps read
# them); the API and `import_agents` take levels in any dimension, and the form keeps them.
SWITCHBOARD_LEVELLED_SKILLS = env.list("SWITCHBOARD_LEVELLED_SKILLS", default=["language"])

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"trace_id": {"()": "queues_app.tracing.TraceIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [trace %(trace_id)s] %(message)s"},
        # LOG_FORMAT=json: one JSON object per line (time, level, logger, message, trace_id).
        "json": {"()": "callcenter.log_format.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if env.str("LOG_FORMAT", default="plain") == "json" else "plain",
            "filters": ["trace_id"],
        }
    },
    "loggers": {
        "queues_app": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
        # Django's own (django.request: every 500 with its traceback, django.security, ...):
        # in place of its defaults, a console for DEBUG only and mail to ADMINS, which left a
        # fault logged nowhere in production. django.server: runserver's requests.
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # gunicorn's access log, written by callcenter.gunicorn_logging.AccessLogger in
        # each worker: one line per request with its trace id, in the same format.
        "gunicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Failed logins and lockouts (django-axes; it masks the username and address here,
        # the admin's access attempts show them). Successful logins go to its access log.
        "axes": {"handlers": ["console"], "level": "WARNING"},
    },
}

# Errors reported to Sentry too when set (the `sentry` extra: pip install 'switchboard[sentry]').
SENTRY_DSN = env.str("SENTRY_DSN", default="")
if SENTRY_DSN:
    init_sentry(SENTRY_DSN)

# Agent order for matching: "fifo" (earliest-queued agent first) or "lifo".
SWITCHBOARD_AGENT_ORDER = env.str("SWITCHBOARD_AGENT_ORDER", default="fifo")
# Where `run_matcher`, the process that matches every web worker's new callers, listens
# and what it publishes in its lease for them to connect to: this host's private address
# with several hosts; empty: 127.0.0.1 (one host). docs/architecture.md, "Matching topology".
SWITCHBOARD_MATCHING_DISPATCHER = env.str("SWITCHBOARD_MATCHING_DISPATCHER", default="")
# How many matcher processes share the new callers: each shard (the callers of some pairs
# of a line and a set of preferences) has a lease of its own; `serve` starts a matcher per
# shard. Every process and host of a deployment must say the same. 1: one matcher.
SWITCHBOARD_MATCHING_SHARDS = env.int("SWITCHBOARD_MATCHING_SHARDS", default=1)
if not 1 <= SWITCHBOARD_MATCHING_SHARDS <= 64:
    raise ImproperlyConfigured(f"SWITCHBOARD_MATCHING_SHARDS is 1 to 64, not {SWITCHBOARD_MATCHING_SHARDS}.")
# A caller who waits this long has one preference relaxed, in this order, then the next.
SWITCHBOARD_ESCALATION = {
    "after_seconds": env.float("SWITCHBOARD_ESCALATE_AFTER_SECONDS", default=60.0),
    "order": env.list("SWITCHBOARD_ESCALATION_ORDER", default=["gender", "language"]),
}
# Why an agent may be not ready: logged in, offered no call. "missed" is added by the
# system for an agent who did not pick up an offered call in time, "disconnected" for one
# whose client stopped sending heartbeats.
AGENT_NOT_READY_REASONS = env.list("AGENT_NOT_READY_REASONS", default=["break", "lunch", "training", "meeting"])
# Seconds an agent has to pick up a call given to them (the phone system confirms with
# POST /api/calls/{id}/answered); unanswered, the call goes back to its place in line and
# the agent is set not ready ("missed"). Empty or 0: off, an assignment is an answer.
ANSWER_TIMEOUT_SECONDS = env.seconds_or_off("ANSWER_TIMEOUT_SECONDS")
if ANSWER_TIMEOUT_SECONDS is not None and not 1 <= ANSWER_TIMEOUT_SECONDS <= 600:
    raise ImproperlyConfigured(
        f"ANSWER_TIMEOUT_SECONDS is 1 to 600 seconds (or empty: off), not {ANSWER_TIMEOUT_SECONDS:g}."
    )
# Queued callbacks (queues_app/calls/queued_callbacks.py): the seconds the phone system has
# to report how dialling a callback's number went once an agent is reserved for it; then
# the centre-wide defaults of a line's `callback_retry_seconds` (before a callback not
# reached is tried again) and `callback_max_attempts` (dialled at most so many times).
CALLBACK_DIAL_SECONDS = env.float("CALLBACK_DIAL_SECONDS", default=90.0)
if not 10 <= CALLBACK_DIAL_SECONDS <= 600:
    raise ImproperlyConfigured(f"CALLBACK_DIAL_SECONDS is 10 to 600 seconds, not {CALLBACK_DIAL_SECONDS:g}.")
CALLBACK_RETRY_SECONDS = env.int("CALLBACK_RETRY_SECONDS", default=300)
if not 10 <= CALLBACK_RETRY_SECONDS <= 86_400:
    raise ImproperlyConfigured(f"CALLBACK_RETRY_SECONDS is 10 to 86400 seconds, not {CALLBACK_RETRY_SECONDS}.")
CALLBACK_MAX_ATTEMPTS = env.int("CALLBACK_MAX_ATTEMPTS", default=3)
# A number has one scheduled callback at a time on a line, and for so long after its time.
CALLBACK_DUPLICATE_SECONDS = env.int("CALLBACK_DUPLICATE_SECONDS", default=3600)
if not 1 <= CALLBACK_MAX_ATTEMPTS <= 10:
    raise ImproperlyConfigured(f"CALLBACK_MAX_ATTEMPTS is 1 to 10, not {CALLBACK_MAX_ATTEMPTS}.")
# Seconds an agent may stay in wrap-up (after-call work) before the escalation loop makes
# them available (a line may set its own, `wrap_up_seconds`). Empty or 0: off, wrap-up
# lasts until the agent is made available.
WRAP_UP_SECONDS = env.seconds_or_off("WRAP_UP_SECONDS")
if WRAP_UP_SECONDS is not None and not 1 <= WRAP_UP_SECONDS <= 3600:
    raise ImproperlyConfigured(f"WRAP_UP_SECONDS is 1 to 3600 seconds (or empty: off), not {WRAP_UP_SECONDS:g}.")
# Seconds a queued or ringing agent's client may go without a heartbeat
# (POST /api/agents/<id>/heartbeat) before the escalation loop makes them not ready
# (`disconnected`). Empty or 0: off, presence is not checked.
AGENT_PRESENCE_SECONDS = env.seconds_or_off("AGENT_PRESENCE_SECONDS")
if AGENT_PRESENCE_SECONDS is not None and not 5 <= AGENT_PRESENCE_SECONDS <= 3600:
    raise ImproperlyConfigured(
        f"AGENT_PRESENCE_SECONDS is 5 to 3600 seconds (or empty: off), not {AGENT_PRESENCE_SECONDS:g}."
    )
if not [r for r in AGENT_NOT_READY_REASONS if r.strip() and r.strip() not in ("missed", "disconnected")]:
    raise ImproperlyConfigured(
        "AGENT_NOT_READY_REASONS needs at least one reason (missed and disconnected are the system's own)."
    )

# Shipments: receives before the DLQ, and the exponential backoff between attempts.
SWITCHBOARD_SHIPMENT_RETRY = {
    "max_receives": env.int("SHIPMENT_MAX_RECEIVES", default=5),
    "backoff_base_seconds": env.float("SHIPMENT_BACKOFF_BASE_SECONDS", default=2.0),
    "backoff_max_seconds": env.float("SHIPMENT_BACKOFF_MAX_SECONDS", default=300.0),
}

# Call events for API tokens with a callback (docs/callbacks.md): written to an outbox in
# the same transaction as the change (this hook), delivered by `run_webhook_worker` with
# these attempts and backoff before the event goes to the callbacks queue's DLQ.
SWITCHBOARD_CALL_EVENTS = "queues_app.webhooks.events.outbox"
# Agent events (`agent.status_changed`, `agent.disconnected`) for every token whose
# callback asked for them, written the same way.
SWITCHBOARD_AGENT_EVENTS = "queues_app.webhooks.events.agent_outbox"
SWITCHBOARD_CALLBACK_RETRY = {
    "max_receives": env.int("CALLBACK_MAX_ATTEMPTS", default=10),
    "backoff_base_seconds": env.float("CALLBACK_BACKOFF_BASE_SECONDS", default=2.0),
    "backoff_max_seconds": env.float("CALLBACK_BACKOFF_MAX_SECONDS", default=600.0),
}
# Callback URLs must use https, unless this is on (local development and tests).
SWITCHBOARD_CALLBACK_ALLOW_HTTP = env.bool("CALLBACK_ALLOW_HTTP", default=DEBUG)
# After `PUT /api/callback` with `rotate`, the previous secret signs deliveries too for this long.
SWITCHBOARD_CALLBACK_SECRET_OVERLAP = timedelta(hours=env.float("CALLBACK_SECRET_OVERLAP_HOURS", default=24.0))
if SWITCHBOARD_CALLBACK_SECRET_OVERLAP < timedelta(0):
    raise ImproperlyConfigured("CALLBACK_SECRET_OVERLAP_HOURS may not be negative.")
# Callbacks reach only the public internet (queues_app/webhooks/destinations.py); these
# networks (CIDRs, comma-separated) are allowed besides, for an internal receiver.
# `make run` allows 127.0.0.0/8 for the local demo.
SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = env.list("CALLBACK_ALLOWED_NETWORKS", default=[])
for _network in SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(
            f"CALLBACK_ALLOWED_NETWORKS: {_network!r} is not a network (e.g. 10.1.0.0/16)"
        ) from _exc

# Tasks: unprocessed work is shed after this long; finished tasks are kept this long.
SWITCHBOARD_TASK_EXPIRY = {
    "pending_seconds": env.float("TASK_PENDING_EXPIRY_SECONDS", default=300.0),
    "finished_seconds": env.float("TASK_FINISHED_EXPIRY_SECONDS", default=60.0),
}

# Audit trail entries are kept this many days (DynamoDB TTL deletes them afterwards).
SWITCHBOARD_AUDIT_RETENTION_DAYS = env.int("SWITCHBOARD_AUDIT_RETENTION_DAYS", default=90)
# A call answered within this many seconds of arriving counts towards the service level.
SERVICE_LEVEL_SECONDS = env.int("SERVICE_LEVEL_SECONDS", default=20)
# The share of callers to answer within SERVICE_LEVEL_SECONDS that staffing advice aims at.
SERVICE_LEVEL_TARGET = env.float("SERVICE_LEVEL_TARGET", default=0.8)
# The interval reports' quarter hours are kept this many days (DynamoDB TTL).
REPORT_RETENTION_DAYS = env.int("REPORT_RETENTION_DAYS", default=400)

# Requests each API token may make (per second, minute or hour; empty: no limit), counted
# in DynamoDB's metrics table so that every worker and host shares them. Over it: 429 with
# Retry-After. The default guards against a runaway client, not a phone system's traffic:
# a phone system makes about 5 requests a call, so 100 a second is 20 calls a second,
# four times the highest rate the load test has held on one host (docs/deploy.md).
API_RATE_LIMIT = env.str("API_RATE_LIMIT", default="100/second").strip()
RATE_PERIODS = {"second": 1, "minute": 60, "hour": 3600}
SWITCHBOARD_API_RATE_LIMIT: tuple[int, int] | None = None
if API_RATE_LIMIT:
    _count, _, _period = API_RATE_LIMIT.partition("/")
    if not (_count.strip().isdigit() and int(_count) > 0 and _period.strip() in RATE_PERIODS):
        raise ImproperlyConfigured(
            f"API_RATE_LIMIT must be requests per second, minute or hour, e.g. 600/minute, not {API_RATE_LIMIT!r}."
        )
    SWITCHBOARD_API_RATE_LIMIT = (int(_count), RATE_PERIODS[_period.strip()])

# Operating under backlog (queues_app.dynamo.fairness): enqueues are refused with 429
# while a queue holds more than its bound; each tenant may put so many shipments a
# second into the live queue (more goes to the spillover queue); live work older than
# SPILLOVER_AFTER_SECONDS is sidelined so fresh work goes first after a backlog.
SWITCHBOARD_FAIRNESS = {
    "backlog_bounds": {
        "calls": env.int("BACKLOG_BOUND_CALLS", default=1000),
        "live": env.int("BACKLOG_BOUND_SHIPMENTS", default=10_000),
    },
    "retry_after_seconds": env.int("BACKPRESSURE_RETRY_AFTER_SECONDS", default=5),
    "tenant_rate": env.float("TENANT_RATE_PER_SECOND", default=10.0),
    "tenant_rates": json.loads(env.str("TENANT_RATES", default="{}")),
    "spillover_after_seconds": env.float("SPILLOVER_AFTER_SECONDS", default=300.0),
}

# Alarms on the overview: the age of the oldest item above which a queue is flagged.
SWITCHBOARD_ALARMS = {
    "oldest_age_seconds": {
        "calls": env.float("ALARM_OLDEST_CALL_SECONDS", default=120.0),
        "live": env.float("ALARM_OLDEST_SHIPMENT_SECONDS", default=900.0),
        "tasks": env.float("ALARM_OLDEST_TASK_SECONDS", default=120.0),
    },
}

# Overview panels are read at most once per this many seconds per cache, however many
# supervisors poll them (0: every poll reads DynamoDB).
# Each serving or working process writes what it counted every COUNTS_FLUSH_SECONDS (10)
# from a thread of its own, however quiet the traffic (figures/counters.py, keep_flushing):
# the reports and /metrics lag the calls by up to twice that; shorter costs a write a period.
SWITCHBOARD_BACKGROUND_FLUSH = True
SWITCHBOARD_FLUSH_SECONDS = env.float("COUNTS_FLUSH_SECONDS", default=10.0)
if not 1 <= SWITCHBOARD_FLUSH_SECONDS <= 300:
    raise ImproperlyConfigured(f"COUNTS_FLUSH_SECONDS is 1 to 300 seconds, not {SWITCHBOARD_FLUSH_SECONDS:g}.")
SWITCHBOARD_PANEL_CACHE_SECONDS = env.float("SWITCHBOARD_PANEL_CACHE_SECONDS", default=1.5)
# Where those figures are cached: each process's memory by default; a cache shared by the
# workers (`filecache:///var/cache/switchboard`, `rediscache://...`) reads once for all.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}
# Open overviews each process pushes the panels to (`GET /live/`, queues_app/views/live.py);
# past it the page polls. Under gunicorn, no more than its --threads less 8 kept for requests.
LIVE_STREAMS_PER_PROCESS = env.int("LIVE_STREAMS_PER_PROCESS", default=120)
if not 0 <= LIVE_STREAMS_PER_PROCESS <= 10_000:
    raise ImproperlyConfigured(
        f"LIVE_STREAMS_PER_PROCESS is 0 to 10000 (0: the overview polls), not {LIVE_STREAMS_PER_PROCESS}."
    )
