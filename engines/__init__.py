"""Numeric engines: numpy and torch only, no user-interface imports.

One module per idea: `policy_gradient` (the shared core: returns, baselines, the
REINFORCE loss, TD errors and GAE), `two_action`, `bandit`, `token_world` and
`token_world_training`, `toy_target`, `bradley_terry` and `kl_optimal`.
"""
