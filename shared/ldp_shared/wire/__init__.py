"""Wire types: what travels between the SDK and the aggregator, as JSON.

A report carries only a client-chosen random id, the config hash and the packed perturbed
bits (base64): no wire type has a field in which a raw value could travel.

* :mod:`.reports`: reports, batches and their outcomes;
* :mod:`.releases`: the released estimates of one attribute (frequencies, heavy hitters,
  means, quantiles) and the period window they rest on;
* :mod:`.trends`, :mod:`.naive_bayes`, :mod:`.itemsets`, :mod:`.knn`, :mod:`.training`:
  the other analyses' requests and results;
* :mod:`.lists`, :mod:`.lifecycle`, :mod:`.plan`, :mod:`.privacy`: pages of lists, a
  collection's state, the planner and the server's view of privacy spent;
* :mod:`.base`: the frozen model every answer derives from, and the JSON-schema bounds of
  numbers that the code checks itself.
"""
