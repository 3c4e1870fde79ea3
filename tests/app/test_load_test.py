"""The load test's simulated learner against a real server: its slider moves are answered by plot data,
and the one-sentence page of a full server counts as refused (bench/load_test.py; no timings asserted)."""

import asyncio
import random

import pytest

from app.pages.baselines import BaselinesPage
from bench import load_test
from bench.load_test import Figures, PageSession, Refused, burst, probe, visit


def test_a_learner_finds_the_plot_sliders_and_its_moves_are_answered(roomy_server):
    answered = asyncio.run(probe(roomy_server.url, ("baselines",), timeout=60))
    assert answered == {"baselines": {BaselinesPage.param.p.label, BaselinesPage.param.b.label}}
    figures = Figures()
    asyncio.run(visit(roomy_server.url, "baselines", answered["baselines"], 4, 0.05, 60, figures, random.Random(0)))
    assert figures.errors == []
    assert len(figures.loads["baselines"]) == 1 and len(figures.readies["baselines"]) == 1 and len(figures.moves["baselines"]) == 4
    assert [kind for _, kind, _ in figures.timeline] == ["load", "ready"] + ["move"] * 4  # each answer, in the order it came
    assert figures.gets["baselines"][0] <= figures.loads["baselines"][0] <= figures.readies["baselines"][0]
    assert "Traceback" not in roomy_server.log()


def test_the_full_server_s_one_sentence_page_is_refused(app_server):
    server = app_server("--max-sessions", "1")

    async def two_sessions():
        first = await PageSession.open(server.url, "baselines")
        try:
            with pytest.raises(Refused):
                await PageSession.open(server.url, "baselines")
        finally:
            await first.close()

    asyncio.run(two_sessions())


def test_a_burst_of_learners_opening_one_page_all_get_it(roomy_server):
    report = asyncio.run(burst(roomy_server.url, "baselines", 4, timeout=60))
    assert report["errors"] == [] and report["ready"]["n"] == 4
    assert report["ready"]["p50"] <= report["ready"]["p95"] <= report["ready"]["max"]


@pytest.mark.parametrize("argv", [["--sessions", "0"], ["--seconds", "0"], ["--burst", "-1"], ["--moves", "0"]])
def test_impossible_numbers_get_one_sentence_and_exit_status_2(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        load_test.main(argv)
    assert stop.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_the_figures_of_each_minute_count_what_ended_in_it():
    timeline = [(5.0, "load", 2.0), (5.5, "ready", 2.5), (10.0, "move", 0.1), (59.9, "move", 0.3), (61.0, "move", 0.5), (150.0, "load", 1.0)]
    minutes = load_test.by_minute(timeline)
    assert [m["minute"] for m in minutes] == [1, 2, 3]
    assert (minutes[0]["moves"]["n"], minutes[0]["moves"]["max"], minutes[0]["loads"]["n"], minutes[0]["readies"]["max"]) == (2, 0.3, 1, 2.5)
    assert (minutes[1]["moves"]["n"], minutes[1]["loads"]["n"]) == (1, 0)
    assert (minutes[2]["moves"]["n"], minutes[2]["loads"]["max"]) == (0, 1.0)


def test_the_rooms_two_lags_an_exact_count_and_a_count_held_after_the_answer():
    room = load_test.Classroom()
    # Learner A answers "spread" at 1.0; learner B answers "spread" too at 1.2; the room view shows 1 at 1.5, 2 at 2.0.
    room.answers += [(1.0, "card", "spread"), (1.2, "card", "spread")]
    room.changes += [(1.0, "card", "spread", +1), (1.2, "card", "spread", +1)]
    room.shown += [(0.5, {}), (1.5, {"card": {"spread": 1}}), (2.0, {"card": {"spread": 2}})]
    lags, missed = room.lags()
    assert missed == 0 and lags == pytest.approx([1.0, 0.8])  # A's answer waits for B's: only 2 is the count at 1.5 and after
    assert room.reached() == pytest.approx([0.5, 0.8])  # 1 is a count held after A's answer (from 1.0 to 1.2), not after B's
    assert room.held("card", "spread", 1.1, 5.0) == {1, 2} and room.held("card", "spread", 0.0, 0.9) == {0}
