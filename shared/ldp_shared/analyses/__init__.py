"""Server-side analyses: estimators that turn sufficient statistics or stored reports into
released results (frequencies of joint and sampled reports, naive Bayes, MASK itemsets).

The device never needs them: ``ldp_client`` imports nothing from this package (a test
checks it), so an SDK install does not load the itemset miner.
"""
