"""A collection's configuration in plain words, from its public config alone."""

from __future__ import annotations

from dataclasses import dataclass

from ldp_shared.collection import AttributeConfig, CollectionConfig

SHOWN_VALUES = 8
"""Values of a domain listed before "and N more"."""


@dataclass(frozen=True)
class AttributeWords:
    name: str
    mechanism: str
    how: str
    values: str
    epsilon: float
    delta: float
    released_as: str


def _how(config: CollectionConfig, attribute: AttributeConfig) -> str:
    """The first line of the mechanism's spec docstring ("An attribute reported by ...")."""
    doc = type(config.spec_of(attribute)).__doc__ or ""
    first = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return first.replace("``", "").rstrip(".") or attribute.mechanism


def _values(config: CollectionConfig, attribute: AttributeConfig) -> str:
    spec = config.spec_of(attribute)
    edges = spec.bin_edges
    if edges is not None:
        return f"numbers in [{edges[0]:g}, {edges[-1]:g}] in {len(edges) - 1} bins"
    lo, hi = getattr(spec, "lo", None), getattr(spec, "hi", None)
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        return f"numbers in [{lo:g}, {hi:g}] (clipped on the device)"
    if spec.is_open:
        size = getattr(spec, "domain_size", None)
        if isinstance(size, int):
            return f"the whole numbers 0 to {size - 1:,} (not listed one by one)"
        if getattr(spec, "value_type", "string") == "integer":
            return "any whole number from 0 to 2^64 − 1 (an open domain: no list of its values)"
        length = getattr(spec, "max_length", None)
        longest = f" of at most {length} bytes" if isinstance(length, int) else ""
        return f"any text{longest} (an open domain: no list of its values)"
    values = spec.values
    shown = ", ".join(values[:SHOWN_VALUES])
    more = len(values) - SHOWN_VALUES
    return f"{len(values)} values: {shown}" + (f" and {more} more" if more > 0 else "")


def attribute_words(config: CollectionConfig) -> list[AttributeWords]:
    """One line per reported attribute: its mechanism, values and exact privacy."""
    out = []
    for attribute in config.attributes:
        privacy = config.privacy.attribute(attribute.name)
        out.append(
            AttributeWords(
                name=attribute.name,
                mechanism=attribute.mechanism,
                how=_how(config, attribute),
                values=_values(config, attribute),
                epsilon=privacy.epsilon,
                delta=privacy.delta,
                released_as=config.spec_of(attribute).released_as,
            )
        )
    return out


def budget_words(config: CollectionConfig) -> str:
    """How a record's ε is spent, in one sentence."""
    reported = len(config.attributes)
    if config.budget == "sample":
        return (
            f"Each record reports one of its {len(config.sampled)} sampled attributes, chosen"
            " at random on the device, with the whole ε of the record (budget 'sample')."
        )
    if reported == 1:
        return "Each record reports its one attribute with the whole ε of the record."
    return (
        f"Each record reports all {reported} attributes; the record's ε is split among"
        " them by their weights (budget 'split'), and the ε of each is listed below."
    )


def label_words(config: CollectionConfig) -> str | None:
    """What the label of a naive Bayes collection is, or ``None``."""
    if config.label is None:
        return None
    privacy = config.privacy.attribute(config.label.name)
    return (
        f"'{config.label.name}' is the class label ({config.label.k} classes). It is never"
        " reported alone, only jointly with each feature; its estimates rest on"
        f" ε = {privacy.epsilon:.4g}."
    )
