"""The two words a long job says besides its results: it waits, or it failed, each in one sentence.

Every long computation is a generator of snapshots: an engine's partial results (a `TrainingView`,
a `Batches`, a `LiveState`), and, where the job can wait for a device or fail for a reason a
person can act on, a `Waiting` or a `Failed`. A page hands every snapshot to its job view
(widgets/job_view.py), which alone shows these two, in the one alert under the job's buttons,
and hands the page the rest. A wait or a failure may carry the partial result to draw meanwhile
(a live run's steps so far), so the page never has to tell the two apart itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Waiting:
    """The job waits for its turn (a device, another download); the next snapshot of another kind ends the wait."""

    sentence: str
    """Where and why it waits, for the page: "Your run waits for the cpu (place 2 in line): ..."."""
    snapshot: object = None
    """What the page draws meanwhile, or None."""


@dataclass(frozen=True)
class Failed:
    """The job stopped short of its end for a reason the learner can act on; it is its last snapshot."""

    sentence: str
    """What went wrong and what to change."""
    snapshot: object = None
    """The partial result to show with it (the steps a run did before it stopped), or None."""
