"""The one exception tree of ldpcollect.

Every error raised on purpose by ``ldp_shared``, ``ldp_client`` or ``ldp_aggregator``
derives from :class:`LDPError`. Each class carries a stable ``type`` slug; the
aggregator turns it into the ``type`` URI of an RFC 9457 problem document and the
SDK turns a problem document back into the matching class. No HTTP status lives here:
which status answers which error is the aggregator's business
(:mod:`ldp_aggregator.problems`).
"""

from __future__ import annotations

from typing import ClassVar


class LDPError(Exception):
    """Base class of every ldpcollect error."""

    type_slug: ClassVar[str] = "error"
    title: ClassVar[str] = "ldpcollect error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class ConfigurationError(LDPError, ValueError):
    """A collection or mechanism was given parameters it cannot run with."""

    type_slug = "invalid-configuration"
    title = "Invalid collection configuration"


class InvalidRecordError(LDPError, ValueError):
    """A raw record does not fit the collection's schema (raised on the client only)."""

    type_slug = "invalid-record"
    title = "Record does not fit the schema"


class InvalidReportError(LDPError, ValueError):
    """A perturbed report cannot be decoded for the collection it claims."""

    type_slug = "invalid-report"
    title = "Report does not fit the collection"


class InvalidQueryError(LDPError, ValueError):
    """An analysis was asked with parameters that make no sense (unknown attribute, ...)."""

    type_slug = "invalid-query"
    title = "Invalid query"


class InfeasiblePlanError(InvalidQueryError):
    """A planner query no collection can meet: a target error below what any number of
    reports gives at this ε, or no registered mechanism plans the attribute."""

    type_slug = "infeasible-plan"
    title = "No plan meets the query"


class NotFoundError(LDPError, LookupError):
    """A named resource does not exist."""

    type_slug = "not-found"
    title = "Not found"


class CollectionNotFoundError(NotFoundError):
    """No collection has this name."""

    type_slug = "collection-not-found"
    title = "Collection not found"


class ModelNotFoundError(NotFoundError):
    """No model of this kind has this id in the collection."""

    type_slug = "model-not-found"
    title = "Model not found"


class ConflictError(LDPError):
    """The resource exists already (collections are immutable once created)."""

    type_slug = "conflict"
    title = "Resource already exists"


class CollectionClosedError(ConflictError):
    """An admin closed the collection to new reports (its estimates stay readable)."""

    type_slug = "collection-closed"
    title = "Collection closed to new reports"


class RoundClosedError(ConflictError):
    """A training job's report arrived for a round that is no longer open."""

    type_slug = "round-closed"
    title = "Training round closed"


class AlreadyParticipatedError(ConflictError):
    """A device took part in a training job before (its ledger says so, or its
    participation token was used)."""

    type_slug = "already-participated"
    title = "Already took part in this job"


class InsufficientReportsError(LDPError):
    """The release policy forbids an estimate: too few reports so far."""

    type_slug = "insufficient-reports"
    title = "Not enough reports to release an estimate"


class AuthenticationError(LDPError):
    """No valid credentials were presented."""

    type_slug = "unauthenticated"
    title = "Authentication required"


class PermissionDeniedError(LDPError):
    """The credentials are valid but do not grant this role."""

    type_slug = "forbidden"
    title = "Permission denied"


class PayloadTooLargeError(LDPError):
    """The request body is over the configured size limit."""

    type_slug = "payload-too-large"
    title = "Request body too large"


class UnsupportedMediaTypeError(LDPError, ValueError):
    """A request body of a JSON route was sent without ``Content-Type: application/json``."""

    type_slug = "unsupported-media-type"
    title = "Unsupported media type"


class MalformedRequestError(LDPError, ValueError):
    """The request body is not valid JSON or not of the expected shape."""

    type_slug = "malformed-request"
    title = "Malformed request"


class InvalidRequestError(LDPError, ValueError):
    """The request body is valid JSON but not of the expected shape."""

    type_slug = "invalid-request"
    title = "Invalid request"


class TransportError(LDPError):
    """The aggregator could not be reached or answered something unreadable (client side)."""

    type_slug = "transport"
    title = "Aggregator unreachable"


class RateLimitedError(TransportError):
    """The aggregator refuses uploads for now: one of its upload limits is reached.

    ``retry_after`` is how many seconds the aggregator asked to wait (``None``: it did not
    say). Nothing of the refused request was stored. A :class:`TransportError`, because
    it means the same to a caller: try again later with the same reports.
    """

    type_slug = "rate-limited"
    title = "Too many reports"

    def __init__(self, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class StorageFullError(TransportError):
    """The aggregator's database has no room left (a full disk or quota).

    Nothing of the refused request was stored; the same request succeeds once space is
    freed. A :class:`TransportError` for the same reason as :class:`RateLimitedError`.
    """

    type_slug = "storage-full"
    title = "Storage full"


class ReportRejectedError(LDPError):
    """The aggregator refused one or more reports of a batch (client side)."""

    type_slug = "report-rejected"
    title = "Report rejected"

    def __init__(self, detail: str, rejected: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.rejected: dict[str, str] = dict(rejected or {})


class PrivacyPolicyError(LDPError):
    """The device's privacy policy refuses a collection or a report (client side).

    Raised before anything is perturbed or sent: ε per record over the owner's limit, a
    mechanism the owner does not allow, or the collection's report limit reached.
    """

    type_slug = "privacy-policy"
    title = "Refused by the device's privacy policy"


class JobCancelledError(LDPError):
    """A long-running job (itemset mining) stopped because its aggregator shut down."""

    type_slug = "job-cancelled"
    title = "Job cancelled"


class CorruptStatisticsError(LDPError):
    """Stored statistics do not fit their collection's config, or a stored model cannot be
    read back (should never happen)."""

    type_slug = "corrupt-statistics"
    title = "Stored statistics are inconsistent"


class MissingDependencyError(LDPError, ImportError):
    """An optional package a call needs is not installed (e.g. pandas for ``to_frame()``);
    the message names the ``pip install`` that adds it."""

    type_slug = "missing-dependency"
    title = "Optional dependency not installed"


PROBLEM_TYPE_BASE = "https://ldpcollect.dev/problems/"

ALL_ERRORS: tuple[type[LDPError], ...] = (
    LDPError,
    ConfigurationError,
    InvalidRecordError,
    InvalidReportError,
    InvalidQueryError,
    InfeasiblePlanError,
    NotFoundError,
    CollectionNotFoundError,
    ModelNotFoundError,
    ConflictError,
    CollectionClosedError,
    RoundClosedError,
    AlreadyParticipatedError,
    InsufficientReportsError,
    AuthenticationError,
    PermissionDeniedError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
    MalformedRequestError,
    InvalidRequestError,
    TransportError,
    RateLimitedError,
    StorageFullError,
    ReportRejectedError,
    PrivacyPolicyError,
    JobCancelledError,
    CorruptStatisticsError,
    MissingDependencyError,
)


def problem_type(error: type[LDPError]) -> str:
    """The stable RFC 9457 ``type`` URI of an error class."""
    return PROBLEM_TYPE_BASE + error.type_slug


def error_class_for_type(type_uri: str) -> type[LDPError]:
    """The error class whose problem ``type`` is ``type_uri`` (LDPError if unknown)."""
    for error in ALL_ERRORS:
        if problem_type(error) == type_uri:
            return error
    return LDPError
