"""Aggregator settings, read from ``LDPCOLLECT_*`` environment variables.

Tokens: the server keeps only their SHA-256 digests (:class:`TokenDigests`), compares
digests with :func:`hmac.compare_digest`, and a role whose token is not configured
cannot be used at all. The admin and the analyst cannot share one token (the analyst
would hold the admin's rights), and ``ldpcollect serve`` warns about a plain token shorter
than :data:`MIN_TOKEN_CHARACTERS`, which could be guessed. A deployment can also
configure the digests directly (``LDPCOLLECT_ADMIN_TOKEN_SHA256``), so the plain token
never reaches the server.
The metrics token (``LDPCOLLECT_METRICS_TOKEN``) is not a role: it opens ``/metrics``
only, so the scraper's configuration, which holds it in plain text, cannot read
estimates.

Upload limits (:mod:`ldp_aggregator.rate_limits`): token buckets counted in reports, per
collection (on by default) and per source address (off by default), held in memory by
each replica. The defaults are chosen on one principle: far above what a real fleet
sends to one replica, far below what one replica can write. See ``docs/api.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ldp_shared.errors import ConfigurationError

Role = Literal["admin", "analyst"]
ROLES: tuple[Role, ...] = ("admin", "analyst")

DEFAULT_DATABASE_URL = "sqlite:///./ldpcollect.db"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_UPLOAD_RATE_PER_COLLECTION = 500.0
DEFAULT_UPLOAD_BURST_PER_COLLECTION = 50_000
DEFAULT_UPLOAD_BURST_PER_ADDRESS = 1_000
DEFAULT_RESHUFFLE_SECONDS = 300.0
_SHA256_HEX = r"^[0-9a-f]{64}$"
_SHA256_HEX_LIST = r"^[0-9a-f]{64}(,[0-9a-f]{64})*$"
"""A role may have several tokens at once (comma-separated), so one can be retired
without downtime: add the new one, move the clients, drop the old one."""
MIN_TOKEN_CHARACTERS = 16
"""Below this a plain token gets a warning at startup: 16 characters of URL-safe base64
are 96 bits, beyond guessing over HTTP; a generated token has 43 (256 bits)."""


def token_digest(token: str) -> str:
    """Hex SHA-256 of a bearer token (what the server stores and compares)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def generate_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe base64)."""
    return secrets.token_urlsafe(32)


class Settings(BaseSettings):
    """Everything the aggregator reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="LDPCOLLECT_", extra="ignore", frozen=True)

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL: sqlite:///path.db or postgresql+psycopg://user:pw@host/db",
    )
    admin_token: SecretStr | None = Field(
        default=None, description="bearer token(s) of the admin, comma-separated"
    )
    analyst_token: SecretStr | None = Field(
        default=None, description="bearer token(s) of the analyst, comma-separated"
    )
    admin_token_sha256: str | None = Field(
        default=None, pattern=_SHA256_HEX_LIST, description="hex SHA-256(s) of the admin token(s)"
    )
    analyst_token_sha256: str | None = Field(
        default=None,
        pattern=_SHA256_HEX_LIST,
        description="hex SHA-256(s) of the analyst token(s)",
    )
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, gt=0)
    reshuffle_seconds: float = Field(
        default=DEFAULT_RESHUFFLE_SECONDS,
        ge=0,
        description=(
            "rewrite the stored reports out of arrival order this often when reports "
            "arrived since (0: only at shutdown); see docs/privacy-at-rest.md"
        ),
    )
    migrate_on_startup: bool = Field(
        default=True, description="run the Alembic migrations (upgrade head) at startup"
    )
    workers: int = Field(
        default=1,
        ge=1,
        description="uvicorn worker processes of `ldpcollect serve` (its --workers)",
    )
    metrics_token: SecretStr | None = Field(
        default=None, description="bearer token /metrics then needs (unset: /metrics is open)"
    )
    metrics_token_sha256: str | None = Field(
        default=None, pattern=_SHA256_HEX, description="hex SHA-256 of the metrics token"
    )
    upload_rate_per_collection: float = Field(
        default=DEFAULT_UPLOAD_RATE_PER_COLLECTION,
        ge=0,
        allow_inf_nan=False,
        description="reports per second one replica accepts into one collection (0: no limit)",
    )
    upload_burst_per_collection: int = Field(
        default=DEFAULT_UPLOAD_BURST_PER_COLLECTION,
        gt=0,
        description="reports one collection may take at once before its rate applies",
    )
    upload_rate_per_address: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        description="reports per second one replica accepts from one source address (0: off)",
    )
    upload_burst_per_address: int = Field(
        default=DEFAULT_UPLOAD_BURST_PER_ADDRESS,
        gt=0,
        description="reports one source address may send at once before its rate applies",
    )
    training_overissue: bool = Field(
        default=True,
        description="issue training tokens beyond a round's places once a place lapsed"
        " unanswered (the defence against place-squatting; off only to measure it)",
    )

    log_url: str | None = Field(
        default=None,
        description=(
            "log mode: nats://host:port,... of a NATS JetStream cluster; uploads are"
            " published there and `ldpcollect fold` writes them (docs/log-mode.md)"
        ),
    )
    log_replicas: int = Field(
        default=3, ge=1, le=5, description="replicas of the log's stream when it is created"
    )
    log_stream: str = Field(
        default="LDPCOLLECT_REPORTS", pattern=r"^[A-Za-z0-9_-]+$", description="stream name"
    )
    log_dedup_seconds: float = Field(
        default=120.0, gt=0, description="the stream's deduplication window, in seconds"
    )
    log_retention: Literal["workqueue", "limits"] = Field(
        default="workqueue",
        description=(
            "workqueue: a folded report is deleted from the stream when acknowledged;"
            " limits: kept until log_max_age_seconds (a replayable log)"
        ),
    )
    log_max_age_seconds: float = Field(
        default=7 * 86_400.0, gt=0, description="the stream drops messages older than this"
    )

    # shuffled collections (docs/shuffler.md)
    shuffler_token: SecretStr | None = Field(
        default=None, description="bearer token of the shuffler (unset: no shuffled batches)"
    )
    shuffler_token_sha256: str | None = Field(
        default=None, pattern=_SHA256_HEX, description="hex SHA-256 of the shuffler token"
    )
    sealing_keys_file: str = Field(
        default="./ldpcollect-sealing-keys.json",
        description="the keyring that opens sealed reports (created with one key if missing)",
    )
    shuffle_min_batch: int = Field(
        default=100, ge=2, description="fewest reports a shuffled batch may carry"
    )

    @field_validator(
        "admin_token", "analyst_token", "metrics_token", "shuffler_token", mode="after"
    )
    @classmethod
    def _empty_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        return None if value is None or value.get_secret_value() == "" else value

    @model_validator(mode="after")
    def _roles_have_their_own_tokens(self) -> Settings:
        digests = self.token_digests()
        if _overlap(digests.admin, digests.analyst):
            raise ValueError(
                "the admin and the analyst have the same token: give each role its own"
                " (with one token the analyst could create and delete collections)"
            )
        if _overlap(digests.metrics, digests.admin) or _overlap(digests.metrics, digests.analyst):
            raise ValueError(
                "the metrics token is also a role's token: give /metrics a token of its own"
                " (the scraper's configuration holds it in plain text)"
            )
        if any(
            _overlap(digests.shuffler, other)
            for other in (digests.admin, digests.analyst, digests.metrics)
        ):
            raise ValueError("the shuffler token is also another token: give it its own")
        return self

    def weak_token_warnings(self) -> list[str]:
        """One line per plain token shorter than :data:`MIN_TOKEN_CHARACTERS`.

        The lines name the setting and the token's length, never the token.
        """
        plain = {
            "LDPCOLLECT_ADMIN_TOKEN": self.admin_token,
            "LDPCOLLECT_ANALYST_TOKEN": self.analyst_token,
            "LDPCOLLECT_METRICS_TOKEN": self.metrics_token,
        }
        return [
            f"{variable} is only {_characters(len(token))} long: a short"
            f" token can be guessed; use at least {MIN_TOKEN_CHARACTERS} random characters,"
            " e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
            for variable, value in plain.items()
            if value is not None
            for token in _plain_tokens(value)
            if len(token) < MIN_TOKEN_CHARACTERS
        ]

    def token_digests(self) -> TokenDigests:
        """The SHA-256 digests of the configured tokens (a plain token wins over a digest)."""
        return TokenDigests(
            admin=_digest_of(self.admin_token, self.admin_token_sha256),
            analyst=_digest_of(self.analyst_token, self.analyst_token_sha256),
            metrics=_digest_of(self.metrics_token, self.metrics_token_sha256),
            shuffler=_digest_of(self.shuffler_token, self.shuffler_token_sha256),
        )

    def without_plain_tokens(self) -> Settings:
        """A copy holding the tokens' digests only (what the running app keeps)."""
        digests = self.token_digests()
        return self.model_copy(
            update={
                "admin_token": None,
                "analyst_token": None,
                "metrics_token": None,
                "shuffler_token": None,
                "shuffler_token_sha256": digests.shuffler,
                "admin_token_sha256": digests.admin,
                "analyst_token_sha256": digests.analyst,
                "metrics_token_sha256": digests.metrics,
            }
        )

    def with_generated_tokens(self) -> tuple[Settings, dict[Role, str]]:
        """Fill in a random token for every role that has none.

        Returns the new settings and the plain tokens that were generated (role to
        token), so that ``ldpcollect serve`` can print them once.
        """
        generated: dict[Role, str] = {}
        update: dict[str, SecretStr] = {}
        digests = self.token_digests()
        for role in ROLES:
            if getattr(digests, role) is None:
                token = generate_token()
                generated[role] = token
                update[f"{role}_token"] = SecretStr(token)
        return self.model_copy(update=update), generated


def _characters(count: int) -> str:
    return f"{count} character" if count == 1 else f"{count} characters"


def _plain_tokens(value: SecretStr) -> list[str]:
    """The tokens of a setting (comma-separated; blanks around them ignored)."""
    return [part.strip() for part in value.get_secret_value().split(",") if part.strip()]


def _digest_of(token: SecretStr | None, digest: str | None) -> str | None:
    """The comma-separated digests of a setting's tokens (a plain value wins)."""
    if token is not None:
        return ",".join(token_digest(part) for part in _plain_tokens(token)) or None
    return digest


def _overlap(first: str | None, second: str | None) -> bool:
    """Whether two settings' digest lists share a token."""
    if first is None or second is None:
        return False
    return bool(set(first.split(",")) & set(second.split(",")))


@dataclass(frozen=True)
class TokenDigests:
    """SHA-256 digests (hex) of the tokens; ``None`` means the role is disabled.

    ``metrics`` is not a role: ``None`` there means ``/metrics`` is open.
    """

    admin: str | None
    analyst: str | None
    metrics: str | None = None
    shuffler: str | None = None

    def role_of(self, token: str) -> Role | None:
        """The role a presented token grants, comparing digests in constant time."""
        return self.role_of_digest(token_digest(token))

    def role_of_digest(self, digest: str) -> Role | None:
        """The role of the token whose hex SHA-256 is ``digest`` (a retired token's:
        ``None``)."""
        presented = digest.encode("ascii")
        admin = _matches(presented, self.admin)
        analyst = _matches(presented, self.analyst)
        if admin:
            return "admin"
        if analyst:
            return "analyst"
        return None

    def is_shuffler(self, token: str) -> bool:
        """Whether ``token`` is the shuffler's (never true when none is configured)."""
        return _matches(token_digest(token).encode("ascii"), self.shuffler)

    def reads_metrics(self, token: str) -> bool:
        """Whether ``token`` opens a token-protected ``/metrics`` (metrics or admin token)."""
        presented = token_digest(token).encode("ascii")
        metrics = _matches(presented, self.metrics)
        return _matches(presented, self.admin) or metrics


def _matches(presented: bytes, digest: str | None) -> bool:
    if digest is None:
        # compare anyway so that an unset role costs the same time as a set one
        hmac.compare_digest(presented, presented)
        return False
    # every configured token is compared, so the time does not tell which one matched
    found = False
    for one in digest.split(","):
        found = hmac.compare_digest(presented, one.encode("ascii")) | found
    return found


def settings_from(
    database_url: str | None, log_url: str | None = None, workers: int | None = None
) -> Settings:
    """The settings from the environment (and the command line's ``--database-url``,
    ``--log``, ``--workers``); a bad one is a :class:`ConfigurationError` naming its
    ``LDPCOLLECT_*`` variable."""
    given: dict[str, Any] = {"database_url": database_url, "log_url": log_url, "workers": workers}
    try:
        return Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as error:
        raise ConfigurationError(_settings_error(error)) from None


def _settings_error(error: ValidationError) -> str:
    first = error.errors()[0]
    message = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
    if not first["loc"]:  # a check across several settings
        return f"invalid settings: {message}"
    return f"invalid setting LDPCOLLECT_{str(first['loc'][0]).upper()}: {message}"
