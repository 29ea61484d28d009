"""Settings: environment prefix, token digests, disabled roles, generated tokens."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from ldp_aggregator.settings import (
    DEFAULT_DATABASE_URL,
    DEFAULT_MAX_BODY_BYTES,
    MIN_TOKEN_CHARACTERS,
    Settings,
    TokenDigests,
    token_digest,
)


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "ADMIN_TOKEN", "ANALYST_TOKEN", "MAX_BODY_BYTES"):
        monkeypatch.delenv(f"LDPCOLLECT_{name}", raising=False)
    settings = Settings()
    assert settings.database_url == DEFAULT_DATABASE_URL == "sqlite:///./ldpcollect.db"
    assert settings.max_body_bytes == DEFAULT_MAX_BODY_BYTES == 16 * 1024 * 1024
    assert settings.token_digests() == TokenDigests(admin=None, analyst=None)


def test_reads_prefixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LDPCOLLECT_DATABASE_URL", "sqlite:////tmp/x.db")
    monkeypatch.setenv("LDPCOLLECT_ADMIN_TOKEN", "s3cret")
    monkeypatch.setenv("LDPCOLLECT_MAX_BODY_BYTES", "1234")
    settings = Settings()
    assert settings.database_url == "sqlite:////tmp/x.db"
    assert settings.max_body_bytes == 1234
    assert settings.token_digests().admin == hashlib.sha256(b"s3cret").hexdigest()
    assert "s3cret" not in repr(settings)


def test_only_digests_are_kept() -> None:
    settings = Settings(admin_token="a-token", analyst_token="b-token")
    kept = settings.without_plain_tokens()
    assert kept.admin_token is None and kept.analyst_token is None
    assert kept.token_digests() == settings.token_digests()
    assert "a-token" not in kept.model_dump_json()


def test_empty_token_disables_the_role() -> None:
    assert Settings(admin_token="").token_digests().admin is None


def test_digest_can_be_configured_instead_of_the_token() -> None:
    digests = Settings(analyst_token_sha256=token_digest("xyz")).token_digests()
    assert digests.role_of("xyz") == "analyst"
    with pytest.raises(ValidationError):
        Settings(admin_token_sha256="not-a-digest")


def test_role_of() -> None:
    digests = TokenDigests(admin=token_digest("adm"), analyst=token_digest("ana"))
    assert digests.role_of("adm") == "admin"
    assert digests.role_of("ana") == "analyst"
    assert digests.role_of("other") is None
    assert TokenDigests(admin=None, analyst=None).role_of("") is None


def test_with_generated_tokens_fills_missing_roles_only() -> None:
    settings, generated = Settings(admin_token="mine").with_generated_tokens()
    assert set(generated) == {"analyst"}
    digests = settings.token_digests()
    assert digests.role_of("mine") == "admin"
    assert digests.role_of(generated["analyst"]) == "analyst"
    assert len(generated["analyst"]) >= 40

    _, none_generated = settings.with_generated_tokens()
    assert none_generated == {}


def test_body_limit_must_be_positive() -> None:
    with pytest.raises(ValidationError):
        Settings(max_body_bytes=0)


def test_metrics_token_is_kept_as_a_digest_and_is_no_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LDPCOLLECT_METRICS_TOKEN", "scrape-me")
    kept = Settings().without_plain_tokens()
    assert kept.metrics_token is None and "scrape-me" not in kept.model_dump_json()
    digests = kept.token_digests()
    assert digests.metrics == token_digest("scrape-me")
    assert digests.reads_metrics("scrape-me") and digests.role_of("scrape-me") is None
    assert not digests.reads_metrics("other")
    monkeypatch.delenv("LDPCOLLECT_METRICS_TOKEN")
    both = Settings(admin_token="adm", metrics_token_sha256=token_digest("m")).token_digests()
    assert both.reads_metrics("adm") and both.reads_metrics("m")
    assert Settings(metrics_token="").token_digests().metrics is None
    _, generated = Settings().with_generated_tokens()
    assert set(generated) == {"admin", "analyst"}  # /metrics stays open unless asked


def test_upload_limits_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = Settings()
    assert defaults.upload_rate_per_collection == 500.0
    assert defaults.upload_burst_per_collection == 50_000
    assert defaults.upload_rate_per_address == 0.0  # off
    monkeypatch.setenv("LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION", "20")
    monkeypatch.setenv("LDPCOLLECT_UPLOAD_BURST_PER_COLLECTION", "10000")
    monkeypatch.setenv("LDPCOLLECT_UPLOAD_RATE_PER_ADDRESS", "0.5")
    monkeypatch.setenv("LDPCOLLECT_UPLOAD_BURST_PER_ADDRESS", "100")
    settings = Settings()
    assert settings.upload_rate_per_collection == 20.0
    assert settings.upload_burst_per_collection == 10_000
    assert settings.upload_rate_per_address == 0.5
    assert settings.upload_burst_per_address == 100


@pytest.mark.parametrize(
    "bad",
    [
        {"upload_rate_per_collection": -1},
        {"upload_rate_per_collection": float("nan")},
        {"upload_rate_per_address": float("inf")},
        {"upload_burst_per_collection": 0},
        {"upload_burst_per_address": -5},
    ],
)
def test_upload_limits_are_checked(bad: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        Settings(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "tokens",
    [
        {"admin_token": "one-token-for-both-roles", "analyst_token": "one-token-for-both-roles"},
        {"admin_token": "x", "analyst_token_sha256": token_digest("x")},
        {"admin_token_sha256": token_digest("y"), "analyst_token_sha256": token_digest("y")},
    ],
    ids=["plain", "plain-and-digest", "digests"],
)
def test_one_token_for_both_roles_is_refused(tokens: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match="the admin and the analyst have the same token"):
        Settings(**tokens)  # type: ignore[arg-type]


@pytest.mark.parametrize("role", ["admin", "analyst"])
def test_a_metrics_token_that_is_a_roles_token_is_refused(role: str) -> None:
    tokens = {"admin_token": "a" * 32, "analyst_token": "b" * 32}
    with pytest.raises(ValidationError, match="the metrics token is also a role's token"):
        Settings(**tokens, metrics_token=tokens[f"{role}_token"])  # type: ignore[arg-type]
    Settings(**tokens, metrics_token="c" * 32)  # type: ignore[arg-type]


def test_short_plain_tokens_are_named_with_their_length_never_shown() -> None:
    settings = Settings(
        admin_token="x", analyst_token="fifteen-chars!!", metrics_token="m" * MIN_TOKEN_CHARACTERS
    )
    warnings = settings.weak_token_warnings()
    assert len(warnings) == 2
    assert warnings[0].startswith("LDPCOLLECT_ADMIN_TOKEN is only 1 character long")
    assert warnings[1].startswith("LDPCOLLECT_ANALYST_TOKEN is only 15 characters long")
    assert not any("fifteen-chars!!" in w or " x " in w for w in warnings)


def test_long_generated_and_digest_tokens_get_no_warning() -> None:
    settings, _ = Settings(admin_token_sha256=token_digest("x")).with_generated_tokens()
    assert settings.weak_token_warnings() == []
