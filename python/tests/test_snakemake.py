"""The Snakemake profile contrib/snakemake/cairn against a real master and
real workers serving jobscripts (--app jobscript=/bin/bash), sandboxed
with the workflow's folder bound read-write: a workflow of a scatter,
N process jobs and a gather; a failing rule; the status and cancel
commands on their own."""

import os
import subprocess

import pytest

import cairn
from conftest import SOURCE, new_folder

PROFILE = os.path.join(SOURCE, "contrib", "snakemake", "cairn")
N = 3

SNAKEFILE = """
N = @N@
localrules: all
rule all:
    input: "total.txt"
rule scatter:
    output: expand("chunks/{i}.txt", i=range(N))
    shell: "for i in $(seq 0 @LAST@); do seq 1 $((10 * (i + 1))) > chunks/$i.txt; done"
rule process:
    input: "chunks/{i}.txt"
    output: "sums/{i}.txt"
    shell: "awk '{{s += $1}} END {{print s}}' {input} > {output}"
rule gather:
    input: expand("sums/{i}.txt", i=range(N))
    output: "total.txt"
    shell: "cat {input} | awk '{{s += $1}} END {{print \\"total\\", s}}' > {output}"
rule broken:
    output: "broken.txt"
    shell: "echo about to fail >&2; exit 1"
""".replace("@N@", str(N)).replace("@LAST@", str(N - 1))


@pytest.fixture(scope="module")
def workflow(cluster_factory):
    folder = os.path.join(new_folder(), "workflow")
    os.makedirs(folder)
    with open(os.path.join(folder, "Snakefile"), "w") as f:
        f.write(SNAKEFILE)
    c = cluster_factory()
    for i in range(2):
        c.worker(f"smk{i}", "--app", "jobscript=/bin/bash", "--sandbox-bind", folder + ":rw",
                 "--slots", "2")
    return c, folder


def snakemake(cluster, folder, *targets):
    # CI=true: Snakemake 7 asks for the jobs' statuses every second, not 10
    env = dict(cluster.env(), CI="true")
    return subprocess.run(["snakemake", "--profile", PROFILE, "--jobs", str(N), *targets],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=500)


def test_scatter_process_gather(workflow):
    cluster, folder = workflow
    r = snakemake(cluster, folder)
    assert r.returncode == 0, r.stdout + r.stderr
    sums = [sum(range(1, 10 * (i + 1) + 1)) for i in range(N)]
    for i in range(N):
        with open(os.path.join(folder, "sums", f"{i}.txt")) as f:
            assert int(f.read()) == sums[i]
    with open(os.path.join(folder, "total.txt")) as f:
        assert f.read() == f"total {sum(sums)}\n"
    jobs = cluster.client.jobs()
    names = sorted(j["name"] for j in jobs)
    assert names == sorted(["snakemake-scatter", "snakemake-gather"] + ["snakemake-process"] * N)
    assert all(j["state"] == "done" and j["app"] == "jobscript" for j in jobs)


def test_a_failing_rule(workflow):
    cluster, folder = workflow
    r = snakemake(cluster, folder, "broken.txt")
    assert r.returncode != 0
    log = r.stdout + r.stderr
    assert "cairn snakemake profile: job" in log and "failed: exit 1 after 1 attempts" in log
    assert "about to fail" in log  # the task's stderr, shown by the status command


def test_submit_status_cancel(workflow):
    cluster, folder = workflow
    script = os.path.join(folder, "sleeper.sh")
    with open(script, "w") as f:
        f.write('#!/bin/sh\n# properties = {"rule": "sleeper", "threads": 1, "resources": {}}\n'
                "sleep 120\n")

    def run(cmd, *args):
        return subprocess.run([os.path.join(PROFILE, cmd), *args], env=cluster.env(),
                              capture_output=True, text=True, timeout=60)
    sub = run("cairn-submit", script)
    assert sub.returncode == 0, sub.stderr
    job_id = sub.stdout.strip()
    assert job_id.isdigit()
    assert run("cairn-status", job_id).stdout == "running\n"
    assert run("cairn-cancel", job_id).returncode == 0
    st = run("cairn-status", job_id)
    assert st.stdout == "failed\n" and "cancelled" in st.stderr
    assert cluster.client.job(job_id).status()["state"] == "cancelled"
    assert run("cairn-cancel", job_id).returncode == 0  # again: nothing to do
    gone = run("cairn-status", "999999")
    assert gone.stdout == "failed\n"
    bad = subprocess.run([os.path.join(PROFILE, "cairn-status"), job_id],
                         env=dict(cluster.env(), CAIRN_ADMIN_TOKEN=""), capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 1 and "HTTP 401" in bad.stderr
