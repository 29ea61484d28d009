"""ldp_simulation: the ``ldpcollect`` demo, the fleet simulation and the data they play.

This package sits on top of the others: it drives real clients (``ldp_client``) against
real aggregators (``ldp_aggregator``) and owns the data generators and the bundled data
they report (:mod:`ldp_simulation.baskets`, :mod:`ldp_simulation.datasets`). Neither the
client SDK nor the aggregator imports it.
"""
