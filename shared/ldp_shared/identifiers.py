"""Names and values a collection spec is made of: what an identifier may look like."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

ATTRIBUTE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
COLLECTION_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"

AttributeName = Annotated[str, StringConstraints(pattern=ATTRIBUTE_NAME_PATTERN)]
CollectionName = Annotated[str, StringConstraints(pattern=COLLECTION_NAME_PATTERN)]
DomainValue = Annotated[str, StringConstraints(min_length=1, max_length=200)]

MAX_DOMAIN_SIZE = 65_536
"""Largest number of values of one attribute, and of the cells ``d·k`` of a feature
reported jointly with a label of ``k`` classes."""
