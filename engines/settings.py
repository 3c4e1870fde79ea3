"""Helpers for the frozen settings dataclasses that every engine takes.

Each settings class documents its fields with an attribute docstring, one line per
field (meaning, range, unit). `field_docs` reads them back, so the command line's
`--help` and the pages' tooltips show the same sentence as the source, and
`require` turns a broken rule into the one clear sentence a user sees.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
import textwrap


@functools.cache
def field_docs(cls) -> dict[str, str]:
    """Map each field of dataclass `cls` to the docstring written under it.

    The docstrings of every dataclass in the MRO are merged, base classes first: a
    subclass that redefines a field with its own docstring replaces the base's sentence,
    and the fields it leaves alone keep the base's.
    """
    docs = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_own_field_docs(klass))
    return docs


def _own_field_docs(cls) -> dict[str, str]:
    """The attribute docstrings written in the body of `cls` itself."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, following in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def require(condition: bool, sentence: str) -> None:
    """Raise ValueError(sentence) unless `condition`; settings call it in __post_init__."""
    if not condition:
        raise ValueError(sentence)


def finite(*values: float) -> bool:
    """True when every value is a finite real number (no NaN, no infinity)."""
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)



def whole(value, low: int, high: int | None = None) -> bool:
    """True when `value` is an int (not a bool) with low <= value (<= high, when given)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)
