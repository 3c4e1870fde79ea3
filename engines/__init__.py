"""Numeric engines: numpy and torch only, no user-interface imports.

Two worlds. Here, the policy-gradient core and the small worlds whose every number is
exact: `policy_gradient` (returns, baselines, the REINFORCE loss, TD errors and GAE) and
`settings` beneath all, then `two_action`, `bandit`, `token_world` and
`token_world_training`, `toy_target`, `bradley_terry` and `kl_optimal`. In `engines.lm`,
the language-model package built on them, layered as its docstring draws.
"""
