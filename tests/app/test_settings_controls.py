"""The page kit's controls come from a settings dataclass: its defaults and docstrings, and back to its settings."""

from dataclasses import dataclass

import panel as pn
import param
import pytest

from engines.settings import field_docs, require
from widgets.settings_controls import SettingsControls


@dataclass(frozen=True)
class Recipe:
    """A small settings class, as the engines write them."""

    steps: int = 300
    """Training steps; at least 1."""
    lr: float | None = None
    """Learning rate; unset = the model's own."""
    clip: float = 1.0
    """Largest gradient norm; > 0."""
    seed: int = 0
    """Seed of the draws; >= 0."""
    kind: str = "a"
    """Which kind: 'a' or 'b'."""

    def __post_init__(self):
        require(self.steps >= 1, f"steps must be at least 1, got {self.steps}.")


RECIPE = SettingsControls(Recipe)


class Page(param.Parameterized):
    steps = RECIPE.integer("steps", "Training steps", bounds=(1, 5000))
    lr = RECIPE.number("lr", "Learning rate", bounds=(1e-6, 1.0), default=3e-4)
    kind = RECIPE.selector("kind", "Kind", objects=["a", "b"])
    plain = param.Integer(default=7, label="A control with no field")
    train_seed = RECIPE.integer("seed", "Seed (training)", bounds=(0, 999))


def test_a_control_takes_the_fields_default_and_docstring_and_the_pages_label_and_bounds():
    page = Page()
    assert (page.steps, page.kind, page.train_seed) == (300, "a", 0)
    assert page.param.steps.doc == field_docs(Recipe)["steps"] == "Training steps; at least 1."
    assert page.param.steps.label == "Training steps" and page.param.steps.bounds == (1, 5000)
    assert page.param.train_seed.doc == "Seed of the draws; >= 0."
    assert isinstance(Page.param.steps, param.Integer) and isinstance(Page.param.lr, param.Number)


def test_the_names_are_the_pages_in_declaration_order_and_the_settings_come_back():
    assert RECIPE.names == ["steps", "lr", "kind", "train_seed"]
    page = Page(steps=12, train_seed=5)
    assert RECIPE.settings(page) == Recipe(steps=12, lr=3e-4, kind="a", seed=5)  # clip, not offered, keeps its default
    assert RECIPE.settings(page, lr=None, clip=2.0) == Recipe(steps=12, lr=None, clip=2.0, seed=5)
    assert RECIPE.values(Recipe(steps=9, lr=0.1, kind="b", seed=3)) == {"steps": 9, "lr": 0.1, "kind": "b", "train_seed": 3}


def test_the_names_are_read_once_the_class_is_made():
    kit = SettingsControls(Recipe)
    with pytest.raises(RuntimeError, match="once the page's class is made"):
        type("Unmade", (param.Parameterized,), {"steps": kit.integer("steps", "Steps"), "names": kit.names})


def test_the_engines_sentence_refuses_settings_it_does_not_allow():
    with pytest.raises(ValueError, match="steps must be at least 1, got 0"):
        RECIPE.settings(Page(), steps=0)


def test_a_control_must_match_its_field():
    kit = SettingsControls(Recipe)
    with pytest.raises(TypeError, match="Recipe.steps is int, not a Number control"):
        kit.number("steps", "Steps")
    with pytest.raises(AttributeError, match="no field 'step'"):
        kit.integer("step", "Steps")
    with pytest.raises(ValueError, match="defaults to 300: the control takes it"):
        kit.integer("steps", "Steps", default=10)  # a second definition of a default is refused
    with pytest.raises(ValueError, match="Recipe.lr has no default"):
        kit.number("lr", "Learning rate")
    assert kit.made == []


def test_a_widget_can_leave_the_docstring_out_of_its_tooltip():
    page = Page()
    assert pn.widgets.IntInput.from_param(page.param.train_seed).description == "Seed of the draws; >= 0."
    assert pn.widgets.IntInput.from_param(page.param.train_seed, description=None).description is None
