"""What the node agent asks before starting a container: is its image's local environment ready?

``ImageEnvironments.prepare`` answers without blocking: ready (the container, its entrypoint and command
prefix applied, and the ``bin`` to put first on ``PATH``), still building (a waiting message showing pip's
latest line; the agent is woken when the build ends), or failed (the pod fails with the reason). A build runs
on its own thread and is shared by every container waiting for the same environment. The events it returns
follow the kubelet's image-pull events (``Pulling``, ``Pulled``, ``Failed``), plus one notice for an image no
rule maps.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gangplane.agent import pod_state as ps
from gangplane.agent.images import ImageEnvironment, find, unmapped_notice, with_bin_first, with_entrypoint
from gangplane.agent.images_build import EnvironmentCache
from gangplane.agent.launch import LaunchContext

FAILED_REASON = "LocalEnvironmentFailed"
FAILURE_MEMORY_SECONDS = (
    60.0  # a failed build answers again for this long (a Job's retried pods), then reruns
)
Event = tuple[str, str, str]  # (type, reason, message)
Holder = tuple[str, str]  # (pod uid, container name)


@dataclass(frozen=True, slots=True)
class Prepared:
    container: dict[str, Any] | None = None  # set when ready to start
    venv: Path | None = None  # the environment whose bin goes first on PATH
    waiting: str = ""  # still building: the container's waiting message
    failure: str = ""  # the build failed: the pod's failure message
    events: tuple[Event, ...] = ()

    def held(self, run: ps.PodRun, name: str) -> ps.PodRun:
        """The pod's run while the container cannot start: waiting for the build, or failed with it."""
        if not self.failure:
            return ps.cannot_create(run, name, "ContainerCreating", self.waiting)
        return ps.fail(ps.cannot_create(run, name, "ErrImagePull", self.failure), FAILED_REASON, self.failure)

    def context(self, ctx: LaunchContext) -> LaunchContext:
        """The launch context with the environment's interpreter and scripts first on ``PATH``."""
        if self.venv is None:
            return ctx
        env = with_bin_first(ctx.base_env, str(self.venv / "bin"), str(self.venv))
        return dataclasses.replace(ctx, base_env=env)


@dataclass(slots=True)
class _Build:
    future: Future[Path]
    started: float
    ended: float | None = None
    last_line: str = ""

    def fresh_failure(self, now: float) -> bool:
        failed = self.future.done() and self.future.exception() is not None
        return failed and self.ended is not None and now - self.ended < FAILURE_MEMORY_SECONDS


class ImageEnvironments:
    """The cluster's ``images:`` rules over one environment cache, shared by every agent of the cluster."""

    def __init__(
        self,
        rules: Sequence[ImageEnvironment],
        cache: EnvironmentCache,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rules, self.cache, self._clock = list(rules), cache, clock
        self._builds: dict[str, _Build] = {}  # key -> the latest build
        self._holding: dict[Holder, _Build] = {}
        self._lock = threading.Lock()

    def prepare(self, holder: Holder, container: Mapping[str, Any], wake: Callable[[], None]) -> Prepared:
        image = str(container.get("image") or "")
        rule = find(self.rules, image)
        if rule is None:
            notice = (("Normal", "Pulled", unmapped_notice(image)),) if image else ()
            return Prepared(container=dict(container), events=notice)
        ready = with_entrypoint(container, rule)
        if not rule.builds_venv():
            return Prepared(container=ready)
        venv = self.cache.published(rule)
        with self._lock:
            build = self._holding.get(holder)
        if build is None:
            if venv is not None:
                return Prepared(container=ready, venv=venv)
            return self._wait_new(holder, rule, ready, wake)
        if not build.future.done():
            return Prepared(waiting=self._progress(image, build))
        return self._finished(holder, build, ready, image)

    def forget(self, uid: str) -> None:
        """The pod is gone: it waits for no build any more."""
        with self._lock:
            for holder in [h for h in self._holding if h[0] == uid]:
                del self._holding[holder]

    def close(self) -> None:
        self.cache.close()

    # -- helpers --------------------------------------------------------------------------------------------
    def _wait_new(
        self, holder: Holder, rule: ImageEnvironment, ready: dict[str, Any], wake: Callable[[], None]
    ) -> Prepared:
        build, image = self._join(rule), str(ready.get("image") or "")
        if build.future.done():  # a failure still remembered
            return self._finished(holder, build, ready, image)
        with self._lock:
            self._holding[holder] = build
        build.future.add_done_callback(lambda _: wake())
        what = f"pip install {' '.join(rule.packages)}; log: {self.cache.log_path(rule)}"
        event = ("Normal", "Pulling", f'Pulling image "{image}": building its local environment ({what})')
        return Prepared(waiting=self._progress(image, build), events=(event,))

    def _finished(self, holder: Holder, build: _Build, ready: dict[str, Any], image: str) -> Prepared:
        with self._lock:
            self._holding.pop(holder, None)
        error = build.future.exception()
        if error is not None:
            message = f'Failed to pull image "{image}": building its local environment failed: {error}'
            return Prepared(failure=message, events=(("Warning", "Failed", message),))
        venv = build.future.result()
        took = self._clock() - build.started
        message = f'Successfully pulled image "{image}" in {took:.1f}s: local environment {venv}'
        return Prepared(container=ready, venv=venv, events=(("Normal", "Pulled", message),))

    def _join(self, rule: ImageEnvironment) -> _Build:
        """The build in progress for the rule's environment, or one that failed less than a minute ago, or a
        new one."""
        key = self.cache.key(rule)
        with self._lock:
            build = self._builds.get(key)
            if build is not None and (not build.future.done() or build.fresh_failure(self._clock())):
                return build
            build = _Build(Future(), self._clock())
            self._builds[key] = build
        thread = threading.Thread(target=self._run, args=(rule, build), name=f"env-{key}", daemon=True)
        thread.start()
        return build

    def _run(self, rule: ImageEnvironment, build: _Build) -> None:
        def progress(line: str) -> None:
            if line.strip():
                build.last_line = line.strip()

        try:
            path = self.cache.ensure(rule, progress)
        except Exception as err:  # every failure is the pod's: it is reported, never raised on a thread
            build.ended = self._clock()
            build.future.set_exception(err)
            return
        build.ended = self._clock()
        build.future.set_result(path)

    @staticmethod
    def _progress(image: str, build: _Build) -> str:
        latest = f": {build.last_line[:200]}" if build.last_line else ""
        return f'building the local environment of image "{image}"{latest}'


__all__ = ["FAILED_REASON", "ImageEnvironments", "Prepared"]
