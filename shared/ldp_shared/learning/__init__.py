"""What a device needs to take part in a learning job (logistic regression).

* :mod:`.layout`: the features (numbers with bounds, categories one-hot, an intercept)
  and the label; the norms every encoded record and gradient is bounded by.
* :mod:`.device`: what a device computes and sends (its clipped, perturbed gradient, or
  its perturbed capped loss).

These modules run on the device, so they live outside :mod:`ldp_shared.analyses` (which
holds the aggregator's estimators and which the SDK does not import). The training
rounds are :mod:`ldp_shared.analyses.logistic`.
"""
