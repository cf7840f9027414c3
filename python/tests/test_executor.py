"""cairn.Executor against a real master and real workers running the
runner cairn-app-python in their sandbox: 200 calls with map(), an
exception raised on a worker with its traceback, functions by name and
by value, large arguments and results, a call that kills its runner, and
the requests it makes (one held wait per job, not one poll per call)."""

import math
import operator
import os
import re
import sys

import cloudpickle
import pytest

import cairn
from test_client import metric

# This module is not importable on the workers: its functions go by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

WORKERS = 4


@pytest.fixture(scope="module")
def cluster(cluster_factory):
    c = cluster_factory()
    c.python_workers(WORKERS)
    return c


def square_plus(x, offset=0):
    return x * x + offset


def test_map_of_200_calls(cluster):
    before = metric(cluster.client, "cairn_http_requests_total", "/v1/jobs/{id}")
    held = metric(cluster.client, "cairn_job_waits_held_total")
    with cairn.Executor(cluster.client, name="map200") as ex:
        got = list(ex.map(lambda x: square_plus(x, 1), range(200)))
        jobs = ex.jobs_submitted
    assert got == [x * x + 1 for x in range(200)]
    assert 1 <= jobs <= 3, jobs
    # per job: held waits (one at a time, each up to wait_seconds), a read of
    # the task pages when one returns, the delete; never one per call
    asked = metric(cluster.client, "cairn_http_requests_total", "/v1/jobs/{id}") - before
    assert asked <= 30 * jobs, asked
    assert metric(cluster.client, "cairn_job_waits_held_total") >= held + 1
    assert [j for j in cluster.client.jobs() if j["name"].startswith("map200-")] == []  # deleted


def test_submit_with_kwargs_and_as_completed(cluster):
    import concurrent.futures as cf
    with cairn.Executor(cluster.client, batch_delay=0.01) as ex:
        fs = {ex.submit(square_plus, i, offset=i): i for i in range(12)}
        for f in cf.as_completed(fs, timeout=240):
            i = fs[f]
            assert f.result() == i * i + i


def inner_fail(n):
    def deeper(k):
        raise ValueError(f"bad value {k}")
    return deeper(n + 1)


def test_a_function_in_batch_after_batch(cluster):
    """Each batch uploads its function again: deleting the job before
    removed the file the next job names."""
    with cairn.Executor(cluster.client, name="again") as ex:
        for i in range(3):
            assert ex.submit(square_plus, i).result(timeout=240) == i * i
        assert ex.jobs_submitted == 3


def test_exception_with_its_remote_traceback(cluster):
    with cairn.Executor(cluster.client) as ex:
        f = ex.submit(inner_fail, 6)
        with pytest.raises(ValueError, match="bad value 7") as e:
            f.result(timeout=240)
    tb = e.value.__cause__
    assert isinstance(tb, cairn.RemoteTraceback)
    assert "in inner_fail" in tb.tb and "in deeper" in tb.tb
    assert "ValueError: bad value 7" in tb.tb
    assert "cairn-app-python" in tb.tb  # it happened in the runner, on a worker


def test_functions_by_name(cluster):
    """With pickle alone, an importable function travels by name: the
    worker imports it; one of a module it cannot import (this one) fails
    there."""
    with cairn.Executor(cluster.client, serializer="pickle") as ex:
        assert list(ex.map(math.factorial, [5, 10])) == [120, 3628800]
        assert ex.submit(operator.mul, 6, 7).result(timeout=240) == 42
        with pytest.raises(ModuleNotFoundError, match="test_executor") as e:
            ex.submit(square_plus, 3).result(timeout=240)
        assert "ModuleNotFoundError" in e.value.__cause__.tb


def test_large_arguments_and_results(cluster):
    big = os.urandom(200000)
    with cairn.Executor(cluster.client) as ex:
        f = ex.submit(lambda b: (len(b), bytes(reversed(b))), big)
        n, rev = f.result(timeout=240)
        assert n == len(big) and rev == big[::-1]
        # a return value past the output's 1 MiB travels as result.pickle
        out = ex.submit(lambda n: b"z" * n, 3 << 20).result(timeout=240)
        assert out == b"z" * (3 << 20)


def test_prints_stay_out_of_the_result(cluster):
    def noisy():
        import subprocess
        print("x" * 100000)
        subprocess.run(["echo", "from a child"], check=True)
        return "quiet"
    with cairn.Executor(cluster.client) as ex:
        assert ex.submit(noisy).result(timeout=240) == "quiet"


def test_a_call_that_kills_its_runner(cluster):
    with cairn.Executor(cluster.client, max_attempts=1) as ex:
        f = ex.submit(os._exit, 3)
        with pytest.raises(cairn.TaskFailed) as e:
            f.result(timeout=240)
    assert e.value.reason == "exit 3" and e.value.exit_status == 3


def test_a_call_that_cannot_travel(cluster):
    with cairn.Executor(cluster.client) as ex:
        import threading
        f = ex.submit(len, threading.Lock())
        with pytest.raises(TypeError):
            f.result(timeout=10)
    with pytest.raises(RuntimeError, match="shutdown"):
        ex.submit(len, "abc")


def test_calls_on_an_app_no_worker_serves(cluster):
    """shutdown(cancel_futures=True) cancels the calls not sent and the
    jobs out: their futures fail with TaskFailed."""
    ex = cairn.Executor(cluster.client, app="nobody")
    fs = [ex.submit(abs, -i) for i in range(3)]
    ex.flush()
    ex.shutdown(wait=True, cancel_futures=True)
    for f in fs:
        assert f.cancelled() or isinstance(f.exception(timeout=60), cairn.TaskFailed)
    assert [j for j in cluster.client.jobs() if j["app"] == "nobody"] == []


def test_the_runners_refusal_of_bad_arguments(cluster):
    job = cairn.Job("raw", app="python", max_attempts=1)
    job.task("a", args=["--nonsense"])
    h = cluster.client.submit(job)
    assert h.wait(timeout=120)["state"] == "failed"
    r = h.results()["a"]
    assert r.exit_status == 2 and re.search(rb"usage: cairn-app-python", r.stderr)
