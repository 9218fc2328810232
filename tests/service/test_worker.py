"""The scoring worker's queue, with jobs that record their order (no model needed): steps of
admitted streams run before new work, new work that has waited its patience runs next, and
only new work is refused when the queue is full."""

import asyncio
import threading
import time

import pytest

from groundsense.service.worker import LOAD_WINDOW_S, PATIENCE_S, Load, QueueFull, ScoringWorker


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


def test_overdue_new_work_and_steps_take_turns(worker):
    """A backlog of new work that has waited its patience goes one job at a time, each followed by
    the steps' turn: neither kind starves the other."""
    order: list[str] = []
    release = blocked(worker)
    futures = [worker.submit(recorder(order, f"new {i}")) for i in (1, 2)]
    time.sleep(PATIENCE_S + 0.1)
    futures += [worker.submit(recorder(order, f"step {i}"), step=True) for i in (1, 2)]
    release.set()
    for future in futures:
        future.result(timeout=10)
    assert order == ["new 1", "step 1", "new 2", "step 2"]


def test_the_load_is_the_share_of_the_window_spent_on_each_kind(worker):
    worker.submit(lambda _: time.sleep(0.3), step=True, stream=1).result(timeout=10)
    worker.submit(lambda _: time.sleep(0.1), step=True, stream=2).result(timeout=10)
    worker.submit(lambda _: time.sleep(0.6)).result(timeout=10)
    load = worker.load()
    assert load.seconds == LOAD_WINDOW_S and load.streams == 2
    assert 0.4 <= load.steps * LOAD_WINDOW_S < 0.8 and 0.6 <= load.other * LOAD_WINDOW_S < 1.2


def test_a_stream_is_admitted_while_one_more_fits():
    assert Load(steps=0.9, other=0.1, seconds=30).room_for_a_stream(0, 0.8) is None  # no stream's cost to go by
    assert Load(steps=0.2, other=0.1, seconds=30, streams=2).room_for_a_stream(2, 0.8) is None  # 0.2 + 0.1 + 0.1
    refused = Load(steps=0.5, other=0.2, seconds=30, streams=2).room_for_a_stream(2, 0.8)  # 0.5 + 0.2 + 0.25
    assert refused is not None and "at capacity" in refused and "retry when a stream ends" in refused
    # streams that ran steps lately and closed share the cost: one open stream is not charged for five
    assert Load(steps=0.5, other=0.1, seconds=30, streams=5).room_for_a_stream(1, 0.8) is None  # 0.5 + 0.1 + 0.1
    assert Load(steps=0.5, other=0.2, seconds=30, streams=2).room_for_a_stream(2, 0) is None  # 0: no load limit


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
