"""Logistic regression trained by the aggregator from locally perturbed gradients (LDP-SGD).

* :mod:`.layout`: the features (numbers with bounds, categories one-hot, an intercept)
  and the label; the norms every encoded record and gradient is bounded by.
* :mod:`.device`: what a device computes and sends (its clipped, perturbed gradient, or
  its perturbed capped loss).
* :mod:`.training`: the rounds, from the reports' sufficient statistics only; the
  learning-rate schedule, L2 regularisation and tail averaging.
* :mod:`.planning`: the default round size, rounds and learning rate, from the
  mechanism's noise and the layout (no data).

See ``docs/logistic-regression.md``.
"""
