"""engines/settings.py: attribute docstrings read back for --help, and the refusal helpers."""

from dataclasses import dataclass

import pytest

from engines.settings import field_docs, finite, require


@dataclass(frozen=True)
class Base:
    """A base settings class."""

    steps: int = 10
    """Updates per run; at least 1."""
    lr: float = 0.5
    """Learning rate; > 0."""


@dataclass(frozen=True)
class Child(Base):
    """Overrides one field's default and sentence, another's default only, and adds a field."""

    lr: float = 0.1
    """A smaller learning rate; > 0."""
    steps: int = 20
    seed: int = 0
    """Seed of the run; a whole number >= 0."""


def test_field_docs_of_one_class():
    assert field_docs(Base) == {"steps": "Updates per run; at least 1.", "lr": "Learning rate; > 0."}


def test_field_docs_merge_the_mro_subclass_last():
    assert field_docs(Child) == {
        "steps": "Updates per run; at least 1.",  # redefined without a sentence: the base's stays
        "lr": "A smaller learning rate; > 0.",  # the subclass's own sentence replaces the base's
        "seed": "Seed of the run; a whole number >= 0.",
    }
    assert field_docs(Base)["lr"] == "Learning rate; > 0."  # the base is left as it was


def test_require_and_finite():
    require(True, "never raised.")
    with pytest.raises(ValueError, match="^lr must be positive.$"):
        require(False, "lr must be positive.")
    assert finite(1, 2.5) and not finite(1.0, float("nan")) and not finite(float("inf")) and not finite("1")
