"""The seed's printed lines of a run's results: the `[eval ...]` line of section 6.11 and the worked example of 6.12."""

import numpy as np

from engines.lm.results import EvalResult, WorkedExample, format_eval, format_worked_example
from engines.lm.settings import LMSettings


def test_printed_lines_follow_the_seed():
    """The seed's own printout (seed 000 sections 6.11 and 6.12), from its numbers."""
    e = EvalResult(0, 0.15, 0.520, 0.0, 0.0, 4.12, 91.2, 0.483, 0.936, 0.0, (), (), (), np.zeros((0, 24)), np.zeros((0, 24)), np.zeros(0))
    assert format_eval(e, LMSettings()) == (
        "[eval start] 64 held-out prompts x 4: reward +0.15  P(positive) 0.520  KL 0.00 nats/reply  entropy 4.12  "
        "ref-perplexity 91.2  distinct-1 0.483  distinct-2 0.936"
    )
    logp = np.array([-1.318, -2.378, -0.141])
    ref = np.array([-1.256, -4.295, -0.385])
    ex = WorkedExample("It's unbelievable but the fourth is better", (" than", " most", "'s"), 5.246, 0.05, logp, ref,
                       np.array([-0.062, 1.917, 0.243]), np.array([0.003, -0.096, 5.233]), np.array([4.564, 4.561, 5.233]))
    lines = format_worked_example(ex, "lvwerra/distilbert-imdb").splitlines()
    assert lines[0] == 'worked example (beta = 0.05): prompt "It\'s unbelievable but the fourth is better", classifier log-odds R = +5.246'
    assert lines[1] == "   0 ' than'        log pi  -1.318  log ref  -1.256  log-ratio  -0.062  r_t  +0.003  G_t  +4.564"
    assert lines[2] == "   1 ' most'        log pi  -2.378  log ref  -4.295  log-ratio  +1.917  r_t  -0.096  G_t  +4.561"
    assert lines[3] == "   2 \"'s\"           log pi  -0.141  log ref  -0.385  log-ratio  +0.243  r_t  +5.233  G_t  +5.233"
    assert lines[4] == "  sum of log-ratios = 2.098;  total reward = R - beta * sum = +5.141 = G_0"
    # The log-odds are named after the reward that gave them.
    assert "VADER log-odds" in format_worked_example(ex, "vader") and "reward-model log-odds" in format_worked_example(ex, "reward-model:x.pt")
