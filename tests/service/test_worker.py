"""The scoring worker's queue, with jobs that record their order (no model needed): steps of
admitted streams run before new work, new work that has waited its patience runs next, and
only new work is refused when the queue is full."""

import asyncio
import threading
import time

import pytest

from groundsense.service.worker import PATIENCE_S, QueueFull, ScoringWorker


@pytest.fixture
def worker():
    worker = ScoringWorker(lambda: None, queue_size=2)
    worker.start()
    assert worker.ready.wait(10)
    yield worker
    worker.stop()


def blocked(worker: ScoringWorker) -> threading.Event:
    """Occupy the worker until the returned event is set."""
    release, running = threading.Event(), threading.Event()
    worker.submit(lambda _: (running.set(), release.wait(30)))
    assert running.wait(10)
    return release


def recorder(order: list[str], name: str):
    return lambda _state: order.append(name)


def test_steps_run_before_new_work_in_the_order_they_came(worker):
    order: list[str] = []
    release = blocked(worker)
    futures = [worker.submit(recorder(order, "new"))]
    futures += [worker.submit(recorder(order, name), step=True) for name in ("step a", "step b")]
    release.set()
    for future in futures:
        future.result(timeout=10)
    assert order == ["step a", "step b", "new"]


def test_new_work_that_waited_its_patience_goes_first(worker):
    order: list[str] = []
    release = blocked(worker)
    futures = [worker.submit(recorder(order, "new"))]
    time.sleep(PATIENCE_S + 0.1)
    futures.append(worker.submit(recorder(order, "step"), step=True))
    release.set()
    for future in futures:
        future.result(timeout=10)
    assert order == ["new", "step"]


def test_a_full_queue_refuses_new_work_but_not_steps(worker):
    release = blocked(worker)
    new = [worker.submit(lambda _: "new") for _ in range(2)]
    with pytest.raises(QueueFull):
        worker.submit(lambda _: "refused")
    with pytest.raises(QueueFull):
        asyncio.run(worker.run(lambda _: "refused", timeout_s=5))
    steps = [worker.submit(lambda _: "step", step=True) for _ in range(3)]
    assert worker.pending == 5
    release.set()
    assert [f.result(timeout=10) for f in steps + new] == ["step"] * 3 + ["new"] * 2


def test_stop_cancels_what_waits(worker):
    release = blocked(worker)
    waiting = [worker.submit(lambda _: "new"), worker.submit(lambda _: "step", step=True)]
    stopper = threading.Thread(target=worker.stop)
    stopper.start()
    release.set()
    stopper.join(10)
    assert not stopper.is_alive() and all(f.cancelled() for f in waiting)
