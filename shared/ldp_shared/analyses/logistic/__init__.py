"""Logistic regression trained by the aggregator from locally perturbed gradients (LDP-SGD).

* :mod:`ldp_shared.learning`: the feature layout and what a device computes and sends
  (on the device, so outside ``analyses``).
* :mod:`.training`: the rounds, from the reports' sufficient statistics only; the
  learning-rate schedule, L2 regularisation and tail averaging.
* :mod:`.planning`: the default round size, rounds and learning rate, from the
  mechanism's noise and the layout (no data).

See ``docs/logistic-regression.md``.
"""
