"""The seed chapters' tables, one module per `feedback-lab figures NAME`.

Each module defines `Settings` (a frozen dataclass from `engines/`, whose fields
become the command's options), `compute(settings) -> dict` (the JSON object) and
`render(result) -> str` (the table as the seed prints it).
"""

FIGURES = {
    "two-action": "app.cli.figures.two_action",
    "bandit": "app.cli.figures.bandit",
    "bandit-training": "app.cli.figures.bandit_training",
    "token-world": "app.cli.figures.token_world",
    "token-world-training": "app.cli.figures.token_world_training",
    "toy-target": "app.cli.figures.toy_target",
    "bradley-terry": "app.cli.figures.bradley_terry",
    "kl-optimal": "app.cli.figures.kl_optimal",
    "group-baselines": "app.cli.figures.group_baselines",
}
