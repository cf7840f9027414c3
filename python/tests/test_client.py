"""Client, Job and JobHandle against a real master and real workers: a DAG
of 20 tasks with output files built, submitted, waited for and downloaded
(every digest checked), bad jobs refused (by the package's check and in
the master's words), cancel, delete and priority, the held wait."""

import hashlib
import os
import re
import subprocess
import threading
import time

import pytest

import cairn
from conftest import wait_for

LEVELS, WIDTH = 4, 5  # the DAG: 4 levels of 5 tasks, each reading two parents


@pytest.fixture(scope="module")
def cluster(cluster_factory):
    c = cluster_factory(["--max-wall-seconds", "600"])
    for i in range(3):
        c.worker(f"sh{i}", "--app", "sh=/bin/sh", "--slots", "2")
    return c


def metric(client, name, route_prefix=None):
    """The sum of a counter of /metrics (of the routes starting with
    route_prefix, for cairn_http_requests_total)."""
    text = client._t.request("GET", "/metrics").body.decode()
    total = 0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        if route_prefix is not None:
            m = re.search(r'route="([^"]*)"', line)
            if not m or not m.group(1).startswith(route_prefix):
                continue
        total += float(line.rsplit(" ", 1)[1])
    return total


def tid(level, i):
    return f"L{level}-{i}"


def expected_outputs(seed):
    """What each task of the DAG writes into out.txt, computed here."""
    out = {}
    for i in range(WIDTH):
        out[tid(0, i)] = seed + f"{i}\n".encode()
    for level in range(1, LEVELS):
        for i in range(WIDTH):
            a, b = out[tid(level - 1, i)], out[tid(level - 1, (i + 1) % WIDTH)]
            out[tid(level, i)] = (hashlib.sha256(a + b).hexdigest() + f"  -\n{tid(level, i)}\n"
                                  ).encode()
    return out


def dag_job(seed_path):
    job = cairn.Job("dag20", app="sh", keep="master", outputs=["out.txt"])
    job.file("seed", path=seed_path)
    for i in range(WIDTH):
        job.task(tid(0, i), args=["-c", f'cat inputs/seed > out.txt && echo {i} >> out.txt'],
                 inputs=["seed"])
    for level in range(1, LEVELS):
        for i in range(WIDTH):
            a, b = tid(level - 1, i), tid(level - 1, (i + 1) % WIDTH)
            script = (f"cat inputs/{a}/out.txt inputs/{b}/out.txt | sha256sum > out.txt && "
                      f"echo {tid(level, i)} >> out.txt && echo made {tid(level, i)}")
            job.task(tid(level, i), args=["-c", script], after=[a, b],
                     inputs=[f"{a}/out.txt", f"{b}/out.txt"])
    return job


def test_dag_of_20_tasks_with_output_files(cluster, tmp_path):
    seed = b"seed of the dag " + os.urandom(8).hex().encode() + b"\n"
    (tmp_path / "seed.txt").write_bytes(seed)
    job = dag_job(str(tmp_path / "seed.txt"))
    assert len(job.tasks) == 20
    handle = cluster.client.submit(job)
    assert handle.id > 0 and handle.ntasks == 20
    final = handle.wait(timeout=240)
    assert final["state"] == "done", final
    assert final["counts"]["done"] == 20

    want = expected_outputs(seed)
    results = handle.results()
    assert list(results) == [t["id"] for t in job.tasks]  # job-file order
    for task_id, r in results.items():
        assert r.state == "done" and r.exit_status == 0
        listed = {f["name"]: f for f in r.outputs}
        assert listed["out.txt"]["sha256"] == hashlib.sha256(want[task_id]).hexdigest()
        assert listed["out.txt"]["size"] == len(want[task_id])
        if not task_id.startswith("L0-"):
            assert r.text == f"made {task_id}\n"

    got = handle.download_all(str(tmp_path / "out"))
    assert got["kept"] == [] and len(got["files"]) == 20
    assert got["bytes"] == sum(len(v) for v in want.values())
    for task_id, data in want.items():
        path = tmp_path / "out" / cairn.encode_id(task_id) / "out.txt"
        assert path.read_bytes() == data, task_id

    sha_seed = hashlib.sha256(seed).hexdigest()
    assert cluster.client._t.request("HEAD", "/v1/files/" + sha_seed).status == 200
    with pytest.raises(cairn.NotFound):
        cluster.client._t.request("HEAD", "/v1/files/" + "1" * 64)

    one = tmp_path / "one.txt"
    sha, size = handle.download(tid(3, 2), "out.txt", str(one),
                                hashlib.sha256(want[tid(3, 2)]).hexdigest())
    assert one.read_bytes() == want[tid(3, 2)] and size == len(want[tid(3, 2)])
    with pytest.raises(cairn.Unavailable, match="hash to"):
        handle.download(tid(3, 2), "out.txt", str(tmp_path / "bad.txt"), "0" * 64)
    assert not (tmp_path / "bad.txt").exists()
    with pytest.raises(cairn.NotFound) as e:
        handle.download(tid(3, 2), "nothing.txt", str(tmp_path / "none.txt"))
    assert e.value.status == 404 and e.value.code == "not_found"


def test_bad_jobs_are_refused_before_sending(cluster):
    before = len(cluster.client.jobs())
    cases = [
        (lambda j: (j.task("a", after=["b"]), j.task("b", after=["a"])), "dependency cycle"),
        (lambda j: j.task("a", after=["nobody"]), 'task "a": unknown parent "nobody"'),
        (lambda j: (j.task("a"), j.task("a")), 'task "a": duplicate id'),
        (lambda j: j.task("a", inputs=["missing"]), "input missing is not in \"files\""),
        (lambda j: j.task("a", env={"LD_PRELOAD": "x"}), "LD_PRELOAD may not be set"),
        (lambda j: j.task("a", limits={"wall_minutes": 3}), 'unknown field "wall_minutes"'),
        (lambda j: j.task("a", resources={"cores": 0}), "resources.cores must be an integer"),
        (lambda j: (j.task("a", outputs=["x.txt"]), j.task("b", after=["a"], inputs=["a/y.txt"])),
         '"y.txt" is not among the "outputs" of task "a"'),
    ]
    for build, words in cases:
        job = cairn.Job("bad", app="sh")
        build(job)
        with pytest.raises(cairn.InvalidInput) as e:
            cluster.client.submit(job)
        assert words in e.value.message, e.value.message
        assert e.value.status is None and e.value.code == "bad_request"
    assert len(cluster.client.jobs()) == before  # nothing was sent


def test_bad_job_refused_in_the_masters_words(cluster):
    """The master's own ceiling (--max-wall-seconds 600), which only it
    knows: its 400 and message become InvalidInput."""
    job = cairn.Job("too-long", app="sh")
    job.task("a", args=["-c", "true"], limits={"wall_seconds": 601})
    with pytest.raises(cairn.InvalidInput) as e:
        cluster.client.submit(job)
    assert e.value.status == 400 and e.value.code == "bad_request"
    assert e.value.message == ('task "a": limits.wall_seconds 601 exceeds the server\'s ceiling '
                               'of 600 (--max-wall-seconds)')
    assert "POST /v1/jobs: HTTP 400" in str(e.value)


def test_the_local_check_says_what_the_master_says(cluster):
    """Bad job files sent as they are (no local check) and checked locally:
    both refuse, with the same message."""
    bad = [
        {"app": "sh", "tasks": [{"id": "a", "after": ["a"]}]},
        {"app": "sh", "tasks": [{"id": "a", "args": [1]}]},
        {"app": "sh", "tasks": [{"id": "a", "colour": "red"}]},
        {"app": "sh", "quorum": 2, "tasks": [{"id": "a"}]},
        {"app": "sh", "keep": "nowhere", "tasks": [{"id": "a"}]},
        {"app": "sh", "tasks": [{"id": "a", "env": {"CAIRN_X": "1"}}]},
        {"app": "sh", "tasks": [{"id": "a", "stdin": "in"}]},
        {"app": "sh", "files": [{"name": "a/b", "sha256": "0" * 64}], "tasks": [{"id": "a"}]},
        {"app": "sh", "tasks": [{"id": "a", "outputs": ["../x"]}]},
        {"app": "sh", "tasks": []},
        {"app": "sh", "resources": "big", "tasks": [{"id": "a"}]},
        {"app": "sh", "tasks": [{"id": "a", "resources": 4}]},
        {"app": "sh", "tasks": [{"id": "a", "retry_larger": "yes"}]},
        {"app": "sh", "category": "", "tasks": [{"id": "a"}]},
        {"app": "sh", "tasks": [{"id": "a", "category": "tab\there"}]},
        {"app": "sh", "tasks": [{"id": f"t{i}", "category": f"c{i}"} for i in range(64)]},
    ]
    for d in bad:
        with pytest.raises(cairn.InvalidInput) as local:
            cairn.job.check(d, client_mode=False)
        with pytest.raises(cairn.InvalidInput) as remote:
            cluster.client.request("POST", "/v1/jobs", d)
        assert remote.value.status == 400
        if "outputs" not in str(d):  # the outputs message words it its own way
            assert local.value.message == remote.value.message, d


def test_tasks_that_size_themselves(cluster):
    """"resources": "auto" with a category and "retry_larger" go through
    the package; each result carries what its worker measured, and the
    job's category its peaks (docs/jobs.md, "Automatic sizes")."""
    job = cairn.Job("auto", app="sh", resources="auto", category="shell")
    for i in range(3):
        job.task(f"a{i}", args=["-c", "head -c 3000000 /dev/zero > big && echo ok"])
    job.task("r", args=["-c", "echo ok"], resources={"cores": 1}, retry_larger=True,
             category="small")
    assert job.to_dict()["tasks"][3] == {"id": "r", "args": ["-c", "echo ok"],
                                         "resources": {"cores": 1}, "category": "small",
                                         "retry_larger": True}
    handle = cluster.client.submit(job)
    final = handle.wait(timeout=120)
    assert final["state"] == "done", final
    cats = {c["category"]: c for c in final["categories"]}
    assert cats["shell"]["tasks"] == 3 and cats["shell"]["auto"] == 3
    assert cats["shell"]["measured"] and cats["shell"]["disk_mib"] >= 3
    assert cats["shell"]["size"]["memory_mib"] >= 64
    assert cats["small"]["auto"] == 0
    for task_id, r in handle.results().items():
        assert r.usage.get("wall_seconds", -1) >= 0, (task_id, r.usage)
        assert r.usage.get("disk_bytes", -1) >= (3000000 if task_id != "r" else 0), r.usage
        assert r.cpu_seconds is not None


def test_errors_carry_status_and_code(cluster):
    with pytest.raises(cairn.NotFound) as e:
        cluster.client.job(999999).status()
    assert (e.value.status, e.value.code, e.value.cairn_status) == (404, "not_found",
                                                                    "CAIRN_ENOTFOUND")
    with pytest.raises(cairn.Forbidden) as e:
        cairn.Client(cluster.url, "0" * 64).jobs()  # a token, not the admin's
    assert e.value.status == 403
    with pytest.raises(cairn.Unauthorized) as e:
        cairn.Client(cluster.url, "").jobs()  # none
    assert e.value.status == 401
    with pytest.raises(cairn.Unavailable) as e:
        cairn.Client("http://127.0.0.1:9", "0" * 64).jobs()
    assert e.value.status is None


def test_cancel_delete_priority_and_the_held_wait(cluster):
    job = cairn.Job("sleepy", app="sh", priority=1, lease_seconds=6)  # heartbeats every 2 s
    for i in range(2):
        job.task(f"s{i}", args=["-c", "sleep 60"])
    handle = cluster.client.submit(job)
    assert handle.set_priority(7)["priority"] == 7
    assert handle.status()["priority"] == 7
    wait_for(lambda: handle.status()["counts"]["running"] >= 1, 60, "a task running")

    held = metric(cluster.client, "cairn_job_waits_held_total")
    t0 = time.monotonic()
    with pytest.raises(cairn.Timeout):
        handle.wait(timeout=1.0)
    took = time.monotonic() - t0
    assert 0.9 <= took < 5, took  # held by the master, not answered at once
    assert metric(cluster.client, "cairn_job_waits_held_total") >= held + 1

    # a wait in another thread returns as soon as the job is cancelled
    seen = {}
    waiter = threading.Thread(target=lambda: seen.update(handle.wait(timeout=60)))
    waiter.start()
    time.sleep(0.3)
    r = handle.cancel()
    assert r["state"] == "cancelled" and r["already"] is False
    waiter.join(30)
    assert seen.get("state") == "cancelled"
    assert handle.cancel()["already"] is True

    gone = handle.delete()
    assert gone["job"] == handle.id and gone["tasks"] + gone["tasks_kept"] == 2
    with pytest.raises(cairn.NotFound):
        handle.status()
    with pytest.raises(cairn.NotFound):
        handle.delete(wait=0)


def test_cancelling_a_done_job_is_a_conflict(cluster):
    job = cairn.Job("quick", app="sh")
    job.task("q", args=["-c", "echo hi"])
    handle = cluster.client.submit(job)
    assert handle.wait(timeout=120)["state"] == "done"
    assert handle.results()["q"].text == "hi\n"
    with pytest.raises(cairn.Conflict) as e:
        handle.cancel()
    assert e.value.status == 409
    assert handle.delete(purge=True)["purged"] is True


def test_one_kept_alive_connection_per_thread(cluster):
    client = cairn.Client(cluster.url, cluster.token)
    for _ in range(20):
        client.jobs()
    assert len(client._t._all) == 1
    t = threading.Thread(target=client.jobs)
    t.start()
    t.join()
    assert len(client._t._all) == 2
    client.close()


def test_a_connection_the_master_closed_idle_is_opened_again(cluster):
    """The master closes a connection idle for 15 s (docs/security.md); the
    next request finds it closed and is sent again, once, on a new one."""
    client = cairn.Client(cluster.url, cluster.token)
    client.jobs()
    time.sleep(16)
    assert isinstance(client.jobs(), list)
    assert len(client._t._all) == 2
    client.close()


def test_tls_with_a_ca_file(cluster_factory, tmp_path, monkeypatch):
    """An https master whose certificate the client checks against a CA
    file (ca_file=, else $CAIRN_CA_FILE); without it the handshake fails."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    c = cluster_factory(["--tls-cert", str(cert), "--tls-key", str(key)])
    assert c.url.startswith("https://127.0.0.1:")
    tls = cairn.Client(c.url, c.token, ca_file=str(cert))
    job = cairn.Job("over-tls", app="sh")
    job.task("a", args=["-c", "true"])
    handle = tls.submit(job)
    assert handle.status()["state"] == "running"
    assert handle.cancel()["state"] == "cancelled"
    tls.close()
    monkeypatch.setenv("CAIRN_CA_FILE", str(cert))
    assert cairn.Client(c.url, c.token).jobs()[0]["name"] == "over-tls"
    monkeypatch.delenv("CAIRN_CA_FILE")
    with pytest.raises(cairn.Unavailable, match="CERTIFICATE_VERIFY_FAILED"):
        cairn.Client(c.url, c.token).jobs()
