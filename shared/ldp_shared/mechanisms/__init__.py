"""Local randomizers: one module per mechanism, each a frozen spec with perturb and estimate."""

from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.mask import Mask
from ldp_shared.mechanisms.unary import (
    OptimizedUnaryEncoding,
    SymmetricUnaryEncoding,
    UnaryEncoding,
)

__all__ = [
    "GeneralizedRandomizedResponse",
    "Mask",
    "OptimizedUnaryEncoding",
    "SymmetricUnaryEncoding",
    "UnaryEncoding",
]
