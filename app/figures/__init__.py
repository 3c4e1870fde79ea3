"""The seed chapters' tables, one module per `feedback-lab figures NAME`.

Each module defines `Settings` (a frozen dataclass from `engines/`, whose fields
become the command's options), `compute(settings) -> dict` (the JSON object) and
`render(result) -> str` (the table as the seed prints it).
"""

FIGURES = {
    "two-action": "app.figures.two_action",
    "bandit": "app.figures.bandit",
    "bandit-training": "app.figures.bandit_training",
    "token-world": "app.figures.token_world",
    "token-world-training": "app.figures.token_world_training",
    "toy-target": "app.figures.toy_target",
    "bradley-terry": "app.figures.bradley_terry",
    "kl-optimal": "app.figures.kl_optimal",
}
