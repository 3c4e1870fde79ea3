"""The live-run page's words: its fixed texts and the metric row's labels.

Everything here is text about seed 000 sections 6.11 and 6.12 (REINFORCE on a language model with a
per-token KL penalty) and seed 001's learned reward with its gold score; the numbers come from
engines/lm/ through app/jobs/model_jobs.py, and app/pages/live_run/ shows them.
"""

from __future__ import annotations

import html

INTRO = (
    "This is Chapter 6's experiment of section 6.11, live. A language model continues the first 8 tokens of a "
    "movie review with T more (24 in the chapter), sampled at temperature 1; a sentiment reward scores prompt plus reply in "
    "log-odds; REINFORCE with a leave-one-out baseline over the K replies to each prompt makes the "
    "well-scored replies more likely (the advantage menu swaps it for the group's mean, GRPO's or none; "
    "the page Group baselines compares them exactly). The KL penalty (section 6.12) charges every token for its "
    "log-ratio to the frozen starting model. The default model is the project's own small "
    "GPT-2-architecture model (0.9 M parameters, trained on movie-review text the project generates), "
    "because GPT-2 cannot be downloaded everywhere; the model menu holds the others this server offers. "
    "The default reward is the VADER sentiment lexicon; lvwerra/distilbert-imdb is the chapter's classifier, in the reward menu "
    "where this server offers it."
)
EQUATION = (
    r"r_t = -\beta\,\big(\log \pi_\theta(y_t \mid s_t) - \log \pi_{\text{ref}}(y_t \mid s_t)\big) + \mathbb{1}[t = T-1]\,R(x, y),"
    r"\quad G_t = \sum_{t' \ge t} r_{t'},\quad \text{loss} = -\tfrac{1}{NT}\sum_{i,t} \big(G_t^{(i)} - b_t^{(i)}\big) \log \pi_\theta(y_t^{(i)} \mid s_t^{(i)})"
)
NOTICE = (
    "With β = 0 the reward climbs to its ceiling while the KL grows without limit, the entropy and "
    "distinct-1 fall, and the replies collapse onto a few glowing words on a loop (the chapter's Run 1). "
    "With β = 0.05 or 0.2 the reward rises less and the replies stay English. In the samples, orange "
    "tokens are where the policy has moved away from the reference: that is where the penalty lands."
)
WHY = (
    "This is the experiment the rest of the course prepares: a real language model, a real reward, and "
    "REINFORCE between them. Watch what a reward alone teaches the model, and what the KL penalty keeps: "
    "the reward curve says the run is going well long after the replies say otherwise."
)
PREDICT = (
    "Set the KL coefficient β to 0 in the run's settings (each model starts at a β that keeps it English), "
    "then predict before you press Start: the reward will rise. What will the replies look like after a few hundred steps?"
)
PREDICT_CHOICES = {
    "better": "varied, and more positive English",
    "same": "much as at the start",
    "collapse": "a few glowing words on a loop",
    "noise": "random tokens",
}
PREDICT_EXPLANATION = (
    "A few glowing words on a loop. Nothing in the reward asks for English: every token that raises the "
    "sentiment score is pushed up, the few strongest words win, and the policy piles its probability on "
    "them, so the entropy and distinct-1 fall while the reward climbs (the chapter's Run 1). With β > 0 every "
    "token pays for its log-ratio to the starting model, and the replies stay English."
)
GOODHART = (
    "With a saved reward model the run continues the lab's feeling prompts, on which it was trained. "
    "The dashed lines are the gold score g of the same replies: the hidden rule that labelled the reward model's "
    "training pairs (distinct positive words count, up to three; negative words and crowding cost). The policy is "
    "trained on the reward model's R, which learned g only from replies like those in its pairs, so the further the "
    "policy moves from the reference, the more it finds replies where R is high and g is not: R climbs while g stalls "
    "or falls (Goodhart's law). Over the KL, this is the over-optimisation curve of Gao et al. (2023)."
)
JOINED = ("You are watching the run another learner started with exactly these settings: it gives the same numbers "
          "your own would, so the server trains it once for both of you. Pause holds your view only; Stop leaves it.")
FINISHED = ("This run already ran to its end on this server with exactly these settings, which give the same numbers "
            "yours would: it is shown from its files ({run}). Tick 'Replay a finished run at the pace it trained' "
            "before Start to watch it unfold step by step.")
OPENED = "You are watching a run of the room as it trains. Pause holds your view only; Stop leaves it."
ELSEWHERE = ("It trains in another web process of this server, so you watch it from its files, up to a step "
             "behind.")
FROM_FILES = "The run {run} is shown from its files."
LEFT = "You left the run after step {step}; it trains on for the {others} other learner(s) watching it."
UNOPENABLE = ("The run {run!r} cannot be opened here: its reward model is gone, or its settings are beyond what "
              "this server allows.")
ADVANTAGE_LABELS = {"leave-one-out (Chapter 6's)": "loo", "group mean": "mean", "GRPO (÷ std)": "grpo", "none": "none"}
"""The advantage menu's labels, by engines.lm.settings.ADVANTAGES's value."""
RUN_NAME_PATTERN = r"^[A-Za-z0-9._-]{0,200}$"
"""A run's folder name, as a link may carry it: nothing that could leave the runs folder."""
SECTIONS = {
    "samples": "The newest replies",
    "curves": "KL, entropy, distinct-n",
    "evaluation": "Held-out evaluation and worked example",
    "runs": "The room's runs",
}
"""The tabs under the reward curve, by the page's `section` value."""
CURVE_TITLE = "The run, step by step"
"""The reward curve's title, for its downloads."""
SETTINGS_TITLE = "The run's settings"
"""The header of the settings' fold (folded once a run starts; a click opens it)."""
COMPARE = (
    "Every run of this server, training or done, with how many learners watch it here. Reward, P(positive), "
    "KL (exact) and distinct-1 are each run's last held-out evaluation. Tick runs to draw them over the curves "
    "and to download them; 'Open' shows the first ticked run in place of yours, live if it trains. Chapter 6 "
    "compares three runs with the same seed: β = 0 (Run 1), 0.05 and 0.2 (Runs 2 and 3); start them in three "
    "tabs, or find them here when others in the room have."
)
METRICS = {
    "step": ("step", "{value:.0f}"),
    "reward": ("reward R (log-odds)", "{value:+.2f}"),
    "p_positive": ("P(positive)", "{value:.3f}"),
    "kl": ("KL k1 (nats/reply)", "{value:.2f}"),
    "entropy": ("entropy (nats/token)", "{value:.2f}"),
    "grad_norm": ("gradient norm", "{value:.2f}"),
    "step_time": ("seconds per step", "{value:.2f}"),
}
"""The newest training step's readings above the curves: (label, format) by metrics.jsonl's key."""


def watching_sentence(watching) -> str:
    """The line above the status of how the learner came to the run shown (an app.jobs.shared_runs.Watching):
    joined, shown from its files, opened, followed from another web process; nothing for a run of their own."""
    sentence = {"started": "", "joined": JOINED, "finished": FINISHED, "opened": OPENED, "files": FROM_FILES}[watching.how]
    sentence = sentence.format(run=html.escape(watching.run_id))
    return f"{sentence} {ELSEWHERE}" if watching.elsewhere else sentence
