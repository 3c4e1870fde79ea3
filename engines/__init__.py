"""Numeric engines: numpy and torch only, no user-interface imports.

One module per idea: `policy_gradient` (the shared core), `two_action`, `bandit`,
`token_world`, `toy_target` and `bradley_terry`.
"""
