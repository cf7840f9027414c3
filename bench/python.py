"""python.py BIN -- what the cairn Python package costs (bench/python.sh):

  executor   N no-op calls (abs, by name) through cairn.Executor.map on K
             workers of one slot each serving cairn-app-python: calls a
             second from the first submit to the last result, 3 runs and
             their median; taking turns with
  echo       a job of N tasks of /bin/echo on the same workers, submitted
             and waited for by the package: tasks a second, what the
             master, the workers and their sandbox cost without Python
  roundtrip  one single-task job (app echo) submitted and waited for, R
             times: by the package (Client.submit + JobHandle.wait, one
             kept-alive connection) and by the C command (cairn submit,
             then cairn wait, two processes), taking turns; medians and
             their ratio

against a real cairn-server and real cairn-workers of BIN (a release
build's bin/), on a fresh database in a temporary folder removed after."""

import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "python"))
import cairn  # noqa: E402


def start(bin_dir, folder, workers):
    token = secrets.token_hex(32)
    env = dict(os.environ, CAIRN_ADMIN_TOKEN=token)
    server = subprocess.Popen([os.path.join(bin_dir, "cairn-server"), "--db",
                               os.path.join(folder, "cairn.db"), "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=open(os.path.join(folder, "server.log"), "wb"),
                              env=env)
    line = server.stdout.readline().decode()
    if not line.startswith("cairn-server listening on "):
        sys.exit(f"python bench: cairn-server did not start: {line!r}")
    url = line.split()[-1]
    procs = []
    for i in range(workers):
        procs.append(subprocess.Popen(
            [os.path.join(bin_dir, "cairn-worker"), "--server", url, "--dir",
             os.path.join(folder, f"w{i}"), "--name", f"w{i}", "--slots", "1",
             "--app", "python=" + os.path.join(bin_dir, "cairn-app-python"),
             "--app", "echo=/bin/echo"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, f"w{i}.log"), "wb")))
    return server, procs, url, token


def stop(server, procs):
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(30)
    server.send_signal(signal.SIGTERM)
    server.wait(60)


def executor_run(client, calls):
    with cairn.Executor(client, name="bench", serializer="pickle") as ex:
        t0 = time.monotonic()
        got = list(ex.map(abs, range(-calls, 0)))
        took = time.monotonic() - t0
    assert got == list(range(calls, 0, -1))
    return calls / took


def echo_run(client, tasks):
    job = cairn.Job("bench-echo", app="echo")
    for i in range(tasks):
        job.task(str(i), args=[str(i)])
    t0 = time.monotonic()
    h = client.submit(job)
    assert h.wait(timeout=600)["state"] == "done"
    took = time.monotonic() - t0
    h.delete()
    return tasks / took


def roundtrip_package(client):
    job = cairn.Job("rt", app="echo")
    job.task("t", args=["x"])
    t0 = time.monotonic()
    h = client.submit(job)
    assert h.wait(timeout=60)["state"] == "done"
    return time.monotonic() - t0


def roundtrip_cli(bin_dir, job_file, env):
    cli = os.path.join(bin_dir, "cairn")
    t0 = time.monotonic()
    job = subprocess.run([cli, "submit", job_file], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    subprocess.run([cli, "wait", job, "--timeout", "60"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--trips", type=int, default=30)
    a = ap.parse_args()
    bin_dir = os.path.abspath(a.bin)
    folder = tempfile.mkdtemp(prefix="cairn-bench-python-", dir=os.environ.get("TMPDIR", "/tmp"))
    server, procs, url, token = start(bin_dir, folder, a.workers)
    try:
        client = cairn.Client(url, token)
        executor_run(client, a.workers * 4)  # every worker registered, its cache warm
        rates, echoes = [], []
        for run in range(3):
            rates.append(executor_run(client, a.calls))
            echoes.append(echo_run(client, a.calls))
            print(f"run {run + 1}: executor per_s={rates[-1]:.1f}, echo per_s={echoes[-1]:.1f}",
                  flush=True)
        med, emed = statistics.median(rates), statistics.median(echoes)
        print(f"executor: calls={a.calls} workers={a.workers} per_s={med:.1f} "
              f"ms_per_call={1000.0 / med:.2f} (median of 3)", flush=True)
        print(f"echo: tasks={a.calls} workers={a.workers} per_s={emed:.1f} "
              f"ms_per_task={1000.0 / emed:.2f} (median of 3)", flush=True)

        job_file = os.path.join(folder, "rt.json")
        with open(job_file, "w") as f:
            json.dump({"name": "rt", "app": "echo", "tasks": [{"id": "t", "args": ["x"]}]}, f)
        env = dict(os.environ, CAIRN_SERVER=url, CAIRN_ADMIN_TOKEN=token)
        roundtrip_package(client)
        roundtrip_cli(bin_dir, job_file, env)
        pkg, cli = [], []
        for _ in range(a.trips):  # taking turns, so that the load touches both alike
            pkg.append(roundtrip_package(client))
            cli.append(roundtrip_cli(bin_dir, job_file, env))
        p, c = statistics.median(pkg) * 1000, statistics.median(cli) * 1000
        print(f"roundtrip: trips={a.trips} package_p50_ms={p:.2f} cli_p50_ms={c:.2f} "
              f"package/cli={p / c:.2f}", flush=True)
        client.close()
    finally:
        stop(server, procs)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
