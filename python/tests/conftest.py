"""conftest.py -- the package's tests against a real cairn-server and real
cairn-workers of the build (CAIRN_BIN_DIR, set by ctest; else build/bin
of this checkout), started in a folder of their own (cairn-test-XXXXXX
under $TMPDIR), stopped after the test module. The folder is removed when
every test passed and kept, and named, otherwise or with CAIRN_TEST_KEEP=1
(as tests/support/harness.c does)."""

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("CAIRN_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "python"))  # the package under test, not an installed one
BIN = os.environ.get("CAIRN_BIN_DIR") or os.path.join(SOURCE, "build", "bin")

import cairn  # noqa: E402

_kept = []
_failed = []


def pytest_runtest_logreport(report):
    if report.failed:
        _failed.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    for d in _kept:
        if _failed or os.environ.get("CAIRN_TEST_KEEP"):
            sys.stderr.write(f"\nharness: kept {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)


def bin_path(name):
    p = os.path.join(BIN, name)
    if not os.access(p, os.X_OK):
        pytest.fail(f"{p} is missing: build first (make build)")
    return p


class Cluster:
    """A master on a fresh database and the workers a test starts on it."""

    def __init__(self, folder, master_args=()):
        self.dir = folder
        self.token = secrets.token_hex(32)
        self.workers = []
        env = dict(os.environ, CAIRN_ADMIN_TOKEN=self.token)
        self.server_log = open(os.path.join(folder, "server.log"), "wb")
        self.server = subprocess.Popen(
            [bin_path("cairn-server"), "--db", os.path.join(folder, "cairn.db"), "--listen",
             "127.0.0.1:0", *master_args], stdout=subprocess.PIPE, stderr=self.server_log,
            env=env)
        line = self.server.stdout.readline().decode()
        prefix = "cairn-server listening on "
        if not line.startswith(prefix):
            self.server.kill()
            self.server.wait()
            raise RuntimeError(f"cairn-server did not start (said {line!r}); log in {folder}")
        self.url = line[len(prefix):].strip()
        self.client = cairn.Client(self.url, self.token)

    def env(self):
        """The environment of a command that speaks to this master."""
        return dict(os.environ, CAIRN_SERVER=self.url, CAIRN_ADMIN_TOKEN=self.token)

    def worker(self, name, *args):
        """Starts worker name with args (its --app flags among them)."""
        log = open(os.path.join(self.dir, name + ".log"), "wb")
        p = subprocess.Popen([bin_path("cairn-worker"), "--server", self.url, "--dir",
                              os.path.join(self.dir, name), "--name", name, *args],
                             stdout=log, stderr=subprocess.STDOUT)
        self.workers.append((p, log))
        return p

    def python_workers(self, n, *extra):
        """n workers of one slot serving the runner as app "python"."""
        for i in range(n):
            self.worker(f"py{i}", "--app", "python=" + bin_path("cairn-app-python"),
                        "--slots", "1", *extra)

    def stop(self):
        for p, log in self.workers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p, log in self.workers:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log.close()
        self.client.close()
        self.server.send_signal(signal.SIGTERM)
        try:
            rc = self.server.wait(60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            rc = self.server.wait()
        self.server.stdout.close()
        self.server_log.close()
        return rc


def new_folder():
    d = tempfile.mkdtemp(prefix="cairn-test-", dir=os.environ.get("TMPDIR") or "/tmp")
    _kept.append(d)
    return d


@pytest.fixture(scope="module")
def cluster_factory():
    """Starts masters (each with its own arguments) for a test module and
    stops them after it; a master that does not exit 0 (a sanitizer
    finding) fails the module."""
    made = []

    def make(master_args=()):
        c = Cluster(new_folder(), master_args)
        made.append(c)
        return c
    yield make
    bad = [(c.dir, rc) for c in made for rc in [c.stop()] if rc != 0]
    if bad:
        _failed.append("cluster")
        pytest.fail(f"cairn-server exited with {bad}")


def wait_for(cond, timeout, what):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
