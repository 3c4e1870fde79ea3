"""The language-model engines: seed 000 sections 6.11 and 6.12 and seed 001 sections 6 to 8.

Layered: each module imports only modules on lines below it (and the policy-gradient core,
`engines.settings` and `engines.bradley_terry` beneath them all). Top to bottom:

    frontier       the sampled reward-KL frontier pi* = pi_ref exp(R/beta)/Z of a model and reward (section 6.12)
    reinforce      the REINFORCE run with a leave-one-out baseline and the KL penalty (sections 6.11, 6.12)
    rewards        every reward R(x, y) in log-odds: VADER, sequence classifiers, a learned reward model
    reward_model   the Bradley-Terry reward model r_phi, its training, evaluation and normaliser (seed 001 sections 7, 8)
    frozen_trunk   training the top blocks on a frozen trunk: the reference shares the trunk and reuses its states
    preferences    the lab's preference pairs: gold score g, labels by equation 12, the pairs file, sampling pairs
    sampling       sampling replies (section 6.11's `sample`), per-token logp, entropy and exact KL, prompt tables
    models         loading a causal language model (embedded, packaged, folder or hub), devices, autocast
    prompts        the lab's prompts as text and their fixed train / held-out split
    review_corpus  the grammar of movie reviews the embedded model is trained on, and its bundled prompts
    results        what a run yields (StepResult, EvalResult, the worked example) and the seed's printout of it, without torch
    settings       the frozen settings of a run and of a frontier, without torch

`tests/engines/test_imports.py` holds the package to this order; `tests/test_layers.py` fails on any import
circle in the project.
"""
