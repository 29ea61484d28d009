"""Local randomizers: one module per mechanism, each registered by name.

Importing this package registers the built-in mechanisms: ``oue``, ``sue``, ``grr``,
``exponential`` and ``mask`` for categorical values and baskets, ``flh`` for
strings and integers of an open (or very large) domain, ``hcms`` (Apple's Hadamard
count-mean sketch) for those of an open domain, ``pem`` for strings
whose frequent values the aggregator discovers, ``hadamard`` for a declared
domain of up to 2^22 values (listed, or the integers ``0 … d−1``), ``duchi``,
``piecewise``, ``hybrid``, ``laplace`` and ``gaussian`` (ε, δ) for means of bounded
numbers, ``histogram`` for their distribution over chosen bins; for values a device
reports repeatedly, ``l-grr`` and ``l-osue`` (categorical) and ``dbitflippm`` (a
bounded number's histogram), whose permanent randomization the device memoises
(:mod:`ldp_shared.mechanisms.longitudinal`).
:mod:`ldp_shared.mechanisms.base` defines the interface a module implements and the
registry that maps names to spec classes; ``docs/mechanisms.md`` lists the steps to add
one.
"""

from ldp_shared.mechanisms.base import (
    AttributeSpec,
    Blocks,
    Randomizer,
    Segment,
    StatsBlock,
    Unpacked,
    mechanism_names,
    register,
    spec_class,
)
from ldp_shared.mechanisms.count_mean_sketch import CountMeanSketch, CountMeanSketchSpec
from ldp_shared.mechanisms.dbitflip import DBitFlipPM, DBitFlipSpec
from ldp_shared.mechanisms.duchi import DuchiRandomizer, DuchiSpec
from ldp_shared.mechanisms.exponential import ExponentialRandomizer, ExponentialSpec
from ldp_shared.mechanisms.gaussian import GaussianRandomizer, GaussianSpec
from ldp_shared.mechanisms.grr import (
    GeneralizedRandomizedResponse,
    GeneralizedRandomizedResponseSpec,
)
from ldp_shared.mechanisms.hadamard import HadamardResponse, HadamardSpec
from ldp_shared.mechanisms.histogram import HistogramGRR, HistogramOUE, HistogramSpec
from ldp_shared.mechanisms.hybrid import HybridRandomizer, HybridSpec
from ldp_shared.mechanisms.laplace import LaplaceRandomizer, LaplaceSpec
from ldp_shared.mechanisms.lgrr import LongitudinalGRR, LongitudinalGRRSpec
from ldp_shared.mechanisms.local_hashing import LocalHashing, LocalHashingSpec
from ldp_shared.mechanisms.longitudinal import LongitudinalRandomizer
from ldp_shared.mechanisms.losue import LongitudinalOSUE, LongitudinalOSUESpec
from ldp_shared.mechanisms.mask import Mask, MaskSpec
from ldp_shared.mechanisms.piecewise import PiecewiseRandomizer, PiecewiseSpec
from ldp_shared.mechanisms.prefix_hashing import PrefixHashing, PrefixHashingSpec
from ldp_shared.mechanisms.unary import (
    OptimizedUnaryEncoding,
    SymmetricUnaryEncoding,
    UnaryEncoding,
    UnaryEncodingSpec,
)

__all__ = [
    "AttributeSpec",
    "Blocks",
    "CountMeanSketch",
    "CountMeanSketchSpec",
    "DBitFlipPM",
    "DBitFlipSpec",
    "DuchiRandomizer",
    "DuchiSpec",
    "ExponentialRandomizer",
    "ExponentialSpec",
    "GaussianRandomizer",
    "GaussianSpec",
    "GeneralizedRandomizedResponse",
    "GeneralizedRandomizedResponseSpec",
    "HadamardResponse",
    "HadamardSpec",
    "HistogramGRR",
    "HistogramOUE",
    "HistogramSpec",
    "HybridRandomizer",
    "HybridSpec",
    "LaplaceRandomizer",
    "LaplaceSpec",
    "LocalHashing",
    "LocalHashingSpec",
    "LongitudinalGRR",
    "LongitudinalGRRSpec",
    "LongitudinalOSUE",
    "LongitudinalOSUESpec",
    "LongitudinalRandomizer",
    "Mask",
    "MaskSpec",
    "OptimizedUnaryEncoding",
    "PiecewiseRandomizer",
    "PiecewiseSpec",
    "PrefixHashing",
    "PrefixHashingSpec",
    "Randomizer",
    "Segment",
    "StatsBlock",
    "SymmetricUnaryEncoding",
    "UnaryEncoding",
    "UnaryEncodingSpec",
    "Unpacked",
    "mechanism_names",
    "register",
    "spec_class",
]
