"""The token-world page's column functions (app/pages/token_world/figures.py) on small hand-made engine results:
each plot column checked against the numbers it must hold, written out here, with no engine run and no Panel session."""

from types import SimpleNamespace

import numpy as np
import pytest

from app.pages.token_world.figures import (
    LABELLED_T,
    decomposition_columns,
    episode_path,
    monte_carlo_gap,
    start_readings,
    training_columns,
    training_curve_data,
    training_progress,
    value_cells,
)
from engines.token_world import GaeDecomposition
from engines.token_world_training import training_methods


def decomposition(noises, total=None) -> GaeDecomposition:
    """Three lambdas, one critic per noise; entry (i, j) of bias2 is 10 i + j, variance is 100 more, total their sum."""
    i, j = np.meshgrid(np.arange(3), np.arange(len(noises)), indexing="ij")
    bias2 = 10.0 * i + j
    return GaeDecomposition(np.array([0.0, 0.5, 1.0]), np.array(noises), bias2, bias2 + 100,
                            2 * bias2 + 100 if total is None else np.array(total, dtype=float), "exact")


def test_the_three_panels_read_the_exact_slight_and_chosen_critics():
    data = decomposition_columns(decomposition([0.0, 0.05, 0.15, 0.3]), 0.3)
    assert list(data) == ["lam"] + [f"{n}_{c}" for c in ("exact", "slight", "chosen") for n in ("bias2", "variance", "total")]
    np.testing.assert_array_equal(data["lam"], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(data["bias2_exact"], [0, 10, 20])  # critic 0, noise 0
    np.testing.assert_array_equal(data["bias2_slight"], [1, 11, 21])  # critic 1, noise 0.05
    np.testing.assert_array_equal(data["bias2_chosen"], [3, 13, 23])  # critic 3, noise 0.3 (not 0.15)
    np.testing.assert_array_equal(data["variance_chosen"], [103, 113, 123])
    np.testing.assert_array_equal(data["total_slight"], [102, 122, 142])


def test_a_chosen_noise_of_zero_is_the_exact_critic_and_none_gives_empty_columns():
    data = decomposition_columns(decomposition([0.0, 0.05]), 0.0)  # the engine drops a zero noise: no third critic
    np.testing.assert_array_equal(data["total_chosen"], data["total_exact"])
    np.testing.assert_array_equal(data["total_chosen"], [100, 120, 140])
    empty = decomposition_columns(None)
    assert list(empty) == list(data) and all(len(column) == 0 for column in empty.values())


def test_the_monte_carlo_gap_is_the_largest_over_the_shown_critics_only():
    noises = [0.0, 0.05, 0.15, 0.3]
    exact = decomposition(noises, total=np.zeros((3, 4)))
    sampled = decomposition(noises, total=[[0.01, -0.02, 9.0, 0.03], [0.0, 0.0, 9.0, -0.04], [0.0, 0.0, 9.0, 0.0]])
    assert monte_carlo_gap(sampled, exact, 0.3) == pytest.approx(0.04)  # critic 2 (noise 0.15) is not on a panel
    assert monte_carlo_gap(sampled, exact, 0.15) == pytest.approx(9.0)


def test_the_readings_are_the_values_at_the_start():
    V = np.array([[0.5, 0.0], [0.25, 0.75]])
    Q = np.zeros((2, 2, 2))
    Q[0, 0] = [0.3, 0.7]  # (B, A)
    values = SimpleNamespace(V=V, Q=Q, A=Q - V[..., None])
    assert start_readings(values) == {"V": 0.5, "QA": 0.7, "QB": 0.3, "AA": pytest.approx(0.2), "AB": pytest.approx(-0.2)}


def test_value_cells_are_the_reachable_states_labelled_while_few():
    V = np.arange(12.0).reshape(3, 4) / 8  # (T, T + 1): V(t, k) = (4 t + k) / 8
    cells = value_cells(V)
    assert list(zip(cells["t"], cells["k"])) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    np.testing.assert_array_equal(cells["V"], [0.0, 0.5, 0.625, 1.0, 1.125, 1.25])
    assert cells["label"] == ["0.00", "0.50", "0.62", "1.00", "1.12", "1.25"]
    T = LABELLED_T + 1
    big = value_cells(np.zeros((T, T + 1)))
    assert len(big["t"]) == T * (T + 1) // 2 and set(big["label"]) == {""}


def test_the_episode_path_visits_each_tokens_state():
    path = episode_path(SimpleNamespace(k=np.array([0, 1, 1, 2])))
    np.testing.assert_array_equal(path["t"], [0, 1, 2, 3])
    np.testing.assert_array_equal(path["k"], [0, 1, 1, 2])


def test_training_curves_are_each_methods_mean_over_seeds():
    lambdas = (0.0, 0.5)
    assert training_columns(lambdas) == ("none", "loo", "gae_0", "gae_0.5")
    assert len(training_methods(lambdas)) == 4  # a column for every method the engine trains
    success = np.zeros((4, 3, 2))  # (method, update, seed)
    success[0] = [[0.5, 0.5], [0.5, 0.7], [0.6, 1.0]]
    success[3, 2] = [0.2, 0.4]
    data = training_curve_data(success, lambdas)
    assert list(data) == ["update", "none", "loo", "gae_0", "gae_0.5"]
    np.testing.assert_array_equal(data["update"], [0, 1, 2])
    np.testing.assert_allclose(data["none"], [0.5, 0.6, 0.8])
    np.testing.assert_allclose(data["gae_0.5"], [0.0, 0.0, 0.3])
    assert training_progress(success, 4) == 0.5 and training_progress(success, 2) == 1.0  # updates 0..2 of 4, of 2
