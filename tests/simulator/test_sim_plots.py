"""Plots people read: distinct Gantt colours for neighbouring jobs."""

from __future__ import annotations

import colorsys
import itertools

from gangplane.simulator.plots import job_colour


def test_neighbouring_jobs_get_clearly_different_colours() -> None:
    """Jobs a few ids apart (arrived together, often side by side in the Gantt chart) never share a colour:
    hue, saturation or brightness differ visibly for every pair within 5 ids, over the first 5,000 jobs."""
    for job, gap in itertools.product(range(5000), range(1, 6)):
        a, b = colorsys.rgb_to_hsv(*job_colour(job)), colorsys.rgb_to_hsv(*job_colour(job + gap))
        hue = min(abs(a[0] - b[0]), 1 - abs(a[0] - b[0]))
        assert hue > 0.05 or abs(a[1] - b[1]) > 0.1 or abs(a[2] - b[2]) > 0.1, (job, gap)
