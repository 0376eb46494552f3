"""Django's own database holds users, groups, sessions and API tokens; queues live in DynamoDB."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from queues_app.webhooks.signing import SigningSecret, new_secret

# Writing last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
PREFIX_LENGTH = 8
CALLBACK_FIELDS = [
    "callback_url",
    "callback_secret",
    "callback_agents",
    "callback_secret_legacy",
    "callback_previous_secret",
    "callback_previous_legacy",
    "callback_previous_until",
]


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def usable(self):
        """Not revoked, and its user still active (whether expired or not)."""
        return self.filter(revoked=False, user__is_active=True)

    def active(self, moment=None):
        """Usable and not expired: the tokens the API accepts."""
        moment = moment or timezone.now()
        return self.usable().filter(Q(expires_at__isnull=True) | Q(expires_at__gt=moment))

    def expired(self, moment=None):
        """Usable but past their expiry."""
        return self.usable().filter(expires_at__lte=moment or timezone.now())


class ApiToken(models.Model):
    """A machine's credential for the JSON API. It acts as `user`: a supervisor's token
    may change queues, a viewer's token may only read. Only the SHA-256 of the token is
    stored; the token itself is shown once, when it is created. A token with `expires_at`
    is refused from that moment on; one without never expires (until revoked)."""

    name = models.CharField(max_length=100, help_text="Who uses it, e.g. “phone system”.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=PREFIX_LENGTH, editable=False, help_text="The token's first characters, to recognise it."
    )
    created = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked = models.BooleanField(default=False)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="From this moment the token is refused; empty: it does not expire."
    )

    # Where call events of the calls this token created are POSTed (docs/callbacks.md),
    # signed with the secret; the secret is kept as given, since signing needs it. After a
    # rotation the previous secret signs too, until `callback_previous_until`. A legacy
    # secret predates Standard Webhooks secrets (queues_app/webhooks/signing.py).
    callback_url = models.URLField(max_length=500, blank=True, help_text="Where call events are sent; empty: none.")
    callback_secret = models.CharField(max_length=200, blank=True, editable=False)
    callback_secret_legacy = models.BooleanField(default=False, editable=False)
    callback_previous_secret = models.CharField(max_length=200, blank=True, editable=False)
    callback_previous_legacy = models.BooleanField(default=False, editable=False)
    callback_previous_until = models.DateTimeField(null=True, blank=True, editable=False)
    # With its own calls' events, every agent's changes of status (agent.status_changed).
    callback_agents = models.BooleanField(
        default=False, help_text="Also send every agent's changes of status to the callback."
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        verbose_name = "API token"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.user})"

    @property
    def label(self) -> str:
        """How the audit trail and the log name the token: its name and prefix."""
        return f"{self.name} ({self.prefix})"

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @classmethod
    def issue(cls, user, name: str, *, expires_at=None) -> tuple[ApiToken, str]:
        """Create a token for `user`; returns it and the raw token (never stored)."""
        raw = secrets.token_urlsafe(32)
        while raw.startswith("-"):  # a command line would take it for an option (`--token -x...`)
            raw = secrets.token_urlsafe(32)
        token = cls.objects.create(
            name=name, user=user, key_hash=hash_token(raw), prefix=raw[:PREFIX_LENGTH], expires_at=expires_at
        )
        return token, raw

    @classmethod
    def find(cls, raw: str) -> ApiToken | None:
        """The active token with this raw value, or None (unknown, revoked, expired, inactive user)."""
        if not raw:
            return None
        return cls.objects.active().select_related("user").filter(key_hash=hash_token(raw)).first()

    @classmethod
    def find_expired(cls, raw: str) -> ApiToken | None:
        """The token with this raw value if it would be active but for its expiry."""
        if not raw:
            return None
        return cls.objects.expired().filter(key_hash=hash_token(raw)).first()

    @classmethod
    def callback_of(cls, token_id) -> tuple[str, list[SigningSecret]] | None:
        """Where the events of the calls a token made go: its callback URL and the secrets
        that sign for it now; None once the token is unusable or its callback removed."""
        token = cls.objects.usable().filter(pk=token_id).first()
        if token is None or not token.callback_url:
            return None
        return token.callback_url, token.signing_secrets()

    def set_callback(self, url: str, secret: str | None = None, *, rotate: bool = False, agents: bool = False) -> str:
        """Register the callback with `secret` (a new one when none is given); returns it.
        With `agents`, every agent's changes of status go there too.
        With `rotate`, the secret it replaces keeps signing for SWITCHBOARD_CALLBACK_SECRET_OVERLAP,
        so receivers can switch without missing an event; without, it stops at once."""
        new = secret or new_secret()
        if rotate and self.callback_secret:
            self.callback_previous_secret = self.callback_secret
            self.callback_previous_legacy = self.callback_secret_legacy
            self.callback_previous_until = timezone.now() + settings.SWITCHBOARD_CALLBACK_SECRET_OVERLAP
        else:
            self.callback_previous_secret, self.callback_previous_legacy, self.callback_previous_until = "", False, None
        self.callback_url, self.callback_secret, self.callback_secret_legacy = url, new, False
        self.callback_agents = agents
        self.save(update_fields=CALLBACK_FIELDS)
        return new

    def clear_callback(self) -> None:
        self.callback_url, self.callback_secret, self.callback_secret_legacy = "", "", False
        self.callback_agents = False
        self.callback_previous_secret, self.callback_previous_legacy, self.callback_previous_until = "", False, None
        self.save(update_fields=CALLBACK_FIELDS)

    @classmethod
    def agent_listeners(cls) -> list[int]:
        """The tokens whose callbacks hear of every agent's changes of status."""
        listening = cls.objects.usable().filter(callback_agents=True).exclude(callback_url="")
        return list(listening.values_list("pk", flat=True))

    def previous_secret_until(self, moment=None):
        """Until when the previous secret signs too; None when none does."""
        until = self.callback_previous_until
        if not self.callback_previous_secret or until is None or until <= (moment or timezone.now()):
            return None
        return until

    def signing_secrets(self, moment=None) -> list[SigningSecret]:
        """The secrets that sign a delivery now: the current one, and the previous one
        during a rotation's overlap."""
        found = [SigningSecret(self.callback_secret, self.callback_secret_legacy)] if self.callback_secret else []
        if self.previous_secret_until(moment):
            found.append(SigningSecret(self.callback_previous_secret, self.callback_previous_legacy))
        return found

    def touch(self, moment=None) -> None:
        """Record use, at most once per LAST_USED_RESOLUTION, without saving other fields."""
        moment = moment or timezone.now()
        if self.last_used_at and moment - self.last_used_at < LAST_USED_RESOLUTION:
            return
        ApiToken.objects.filter(pk=self.pk).update(last_used_at=moment)
        self.last_used_at = moment


class DynamoPlaceholder(models.Model):
    """Base of the admin's entries for data that lives in DynamoDB, not in this database.

    No table is ever created or read for these models (`managed = False`); they exist so
    that the admin index lists agents, lines, queues, shipments and tasks, and so that a
    permission can be granted for them. Their admins read DynamoDB through the domains
    and the operations (see `queues_app.admin`)."""

    class Meta:
        abstract = True
        managed = False
        default_permissions = ()


class AgentEntry(DynamoPlaceholder):
    class Meta(DynamoPlaceholder.Meta):
        verbose_name = "agent"
        verbose_name_plural = "agents"
        permissions = [("view_queues", "Can see queues, agents, shipments and tasks in the admin")]


class LineEntry(DynamoPlaceholder):
    class Meta(DynamoPlaceholder.Meta):
        verbose_name = "line"
        verbose_name_plural = "lines"


class QueueEntry(DynamoPlaceholder):
    class Meta(DynamoPlaceholder.Meta):
        verbose_name = "agent queue"
        verbose_name_plural = "agent queues"


class ShipmentEntry(DynamoPlaceholder):
    class Meta(DynamoPlaceholder.Meta):
        verbose_name = "shipment"
        verbose_name_plural = "shipments"


class TaskEntry(DynamoPlaceholder):
    class Meta(DynamoPlaceholder.Meta):
        verbose_name = "task"
        verbose_name_plural = "tasks"
