"""ldp_shared: the mathematics and wire types shared by the ldpcollect client and aggregator.

A pure library (numpy + pydantic): no web, database or network imports.
"""

__version__ = "0.1.0"
