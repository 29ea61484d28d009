"""The gradient mechanisms by name: the built-in ones (imported here, so that they are
filed) and any other filed with :func:`~ldp_shared.mechanisms.gradient.register_gradient`.

Apart from :mod:`ldp_shared.mechanisms.gradient` (the interface they implement and the
registry they file themselves in), so that the interface imports none of them.
"""

from __future__ import annotations

from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms import (  # noqa: F401  (imported to file themselves)
    gradient_gaussian,
    gradient_laplace,
    gradient_sampling,
)
from ldp_shared.mechanisms.gradient import GRADIENTS, GradientRandomizer


def gradient_mechanism_names() -> list[str]:
    """The registered gradient mechanisms' names, sorted."""
    return sorted(GRADIENTS)


def gradient_randomizer(
    name: str, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
) -> GradientRandomizer:
    """The gradient mechanism ``name`` at ``epsilon`` (and ``delta``) for ``d``-vectors."""
    cls = GRADIENTS.get(name)
    if cls is None:
        raise ConfigurationError(
            f"unknown gradient mechanism {name!r}; known: {', '.join(gradient_mechanism_names())}"
        )
    return cls.create(dimension, epsilon, bound, delta)
