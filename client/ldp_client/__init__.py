"""ldp_client: the ldpcollect SDK.

Records are encoded and perturbed on the device (:mod:`ldp_client.privatize`, pure);
only the perturbed reports travel, through :class:`LDPClient` or
:class:`AsyncLDPClient`. On a device, a :class:`Ledger` charges every report before it
leaves and a :class:`DevicePolicy` refuses what the owner does not allow
(``docs/device-privacy.md``). Depends on ``ldp_shared``, httpx, numpy and pydantic only.
"""

from ldp_client.async_client import AsyncLDPClient
from ldp_client.batching import SubmitSummary
from ldp_client.client import LDPClient
from ldp_client.ledger import Ledger, Spending
from ldp_client.policy import (
    DEFAULT_MAX_DELTA_PER_RECORD,
    DEFAULT_MAX_EPSILON_PER_RECORD,
    DevicePolicy,
)
from ldp_client.privatize import privatize, privatize_columns, privatize_many
from ldp_client.reports import ReportColumns
from ldp_client.retry import RetryPolicy
from ldp_shared import __version__
from ldp_shared.errors import (
    AuthenticationError,
    CollectionNotFoundError,
    ConfigurationError,
    ConflictError,
    InsufficientReportsError,
    InvalidQueryError,
    InvalidRecordError,
    LDPError,
    MissingDependencyError,
    PermissionDeniedError,
    PrivacyPolicyError,
    RateLimitedError,
    ReportRejectedError,
    TransportError,
)

__all__ = [
    "DEFAULT_MAX_DELTA_PER_RECORD",
    "DEFAULT_MAX_EPSILON_PER_RECORD",
    "AsyncLDPClient",
    "AuthenticationError",
    "CollectionNotFoundError",
    "ConfigurationError",
    "ConflictError",
    "DevicePolicy",
    "InsufficientReportsError",
    "InvalidQueryError",
    "InvalidRecordError",
    "LDPClient",
    "LDPError",
    "Ledger",
    "MissingDependencyError",
    "PermissionDeniedError",
    "PrivacyPolicyError",
    "RateLimitedError",
    "ReportColumns",
    "ReportRejectedError",
    "RetryPolicy",
    "Spending",
    "SubmitSummary",
    "TransportError",
    "__version__",
    "privatize",
    "privatize_columns",
    "privatize_many",
]
