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
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Role = Literal["admin", "analyst"]
ROLES: tuple[Role, ...] = ("admin", "analyst")

DEFAULT_DATABASE_URL = "sqlite:///./ldpcollect.db"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_UPLOAD_RATE_PER_COLLECTION = 500.0
DEFAULT_UPLOAD_BURST_PER_COLLECTION = 50_000
DEFAULT_UPLOAD_BURST_PER_ADDRESS = 1_000
DEFAULT_RESHUFFLE_SECONDS = 300.0
_SHA256_HEX = r"^[0-9a-f]{64}$"
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
    admin_token: SecretStr | None = Field(default=None, description="bearer token of the admin")
    analyst_token: SecretStr | None = Field(default=None, description="bearer token of the analyst")
    admin_token_sha256: str | None = Field(
        default=None, pattern=_SHA256_HEX, description="hex SHA-256 of the admin token"
    )
    analyst_token_sha256: str | None = Field(
        default=None, pattern=_SHA256_HEX, description="hex SHA-256 of the analyst token"
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

    @field_validator("admin_token", "analyst_token", "metrics_token", mode="after")
    @classmethod
    def _empty_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        return None if value is None or value.get_secret_value() == "" else value

    @model_validator(mode="after")
    def _roles_have_their_own_tokens(self) -> Settings:
        digests = self.token_digests()
        if digests.admin is not None and digests.admin == digests.analyst:
            raise ValueError(
                "the admin and the analyst have the same token: give each role its own"
                " (with one token the analyst could create and delete collections)"
            )
        if digests.metrics is not None and digests.metrics in (digests.admin, digests.analyst):
            raise ValueError(
                "the metrics token is also a role's token: give /metrics a token of its own"
                " (the scraper's configuration holds it in plain text)"
            )
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
            f"{variable} is only {_characters(len(token.get_secret_value()))} long: a short"
            f" token can be guessed; use at least {MIN_TOKEN_CHARACTERS} random characters,"
            " e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
            for variable, token in plain.items()
            if token is not None and len(token.get_secret_value()) < MIN_TOKEN_CHARACTERS
        ]

    def token_digests(self) -> TokenDigests:
        """The SHA-256 digests of the configured tokens (a plain token wins over a digest)."""
        return TokenDigests(
            admin=_digest_of(self.admin_token, self.admin_token_sha256),
            analyst=_digest_of(self.analyst_token, self.analyst_token_sha256),
            metrics=_digest_of(self.metrics_token, self.metrics_token_sha256),
        )

    def without_plain_tokens(self) -> Settings:
        """A copy holding the tokens' digests only (what the running app keeps)."""
        digests = self.token_digests()
        return self.model_copy(
            update={
                "admin_token": None,
                "analyst_token": None,
                "metrics_token": None,
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


def _digest_of(token: SecretStr | None, digest: str | None) -> str | None:
    if token is not None:
        return token_digest(token.get_secret_value())
    return digest


@dataclass(frozen=True)
class TokenDigests:
    """SHA-256 digests (hex) of the tokens; ``None`` means the role is disabled.

    ``metrics`` is not a role: ``None`` there means ``/metrics`` is open.
    """

    admin: str | None
    analyst: str | None
    metrics: str | None = None

    def role_of(self, token: str) -> Role | None:
        """The role a presented token grants, comparing digests in constant time."""
        presented = token_digest(token).encode("ascii")
        admin = _matches(presented, self.admin)
        analyst = _matches(presented, self.analyst)
        if admin:
            return "admin"
        if analyst:
            return "analyst"
        return None

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
    return hmac.compare_digest(presented, digest.encode("ascii"))
