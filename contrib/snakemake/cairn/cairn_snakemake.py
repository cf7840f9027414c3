"""cairn_snakemake.py -- what the profile's three commands do (cairn-submit,
cairn-status, cairn-cancel; docs/python.md, "Snakemake"), with the cairn
package: from python3-cairn, `pip install ./python`, or, in a checkout,
the repository's python/ folder next to contrib/.

Environment: CAIRN_SERVER, CAIRN_ADMIN_TOKEN, CAIRN_CA_FILE (the master,
as for the cairn command); CAIRN_SNAKEMAKE_APP, the app the workers serve
jobscripts with (default "jobscript"); CAIRN_SNAKEMAKE_MAX_ATTEMPTS (default
1: Snakemake's own --restart-times retries a job, after removing what the
failed run left)."""

import json
import os
import sys

try:
    import cairn
except ImportError:
    _src = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "python")
    if os.path.isfile(os.path.join(_src, "cairn", "__init__.py")):
        sys.path.insert(0, os.path.abspath(_src))
    try:
        import cairn
    except ImportError:
        sys.exit("cairn snakemake profile: the cairn Python package is not importable by "
                 f"{sys.executable}: install python3-cairn, or pip install ./python")

# How the task runs the jobscript: its output to stderr (the last 64 KiB
# are kept with the result), so that a rule printing much cannot pass the
# 1 MiB cap of a task's output.
RUN = "exec /bin/bash inputs/jobscript 1>&2"


def fail(msg):
    sys.stderr.write(f"cairn snakemake profile: {msg}\n")
    sys.exit(1)


def properties(jobscript):
    """The job's properties, from the jobscript's "# properties = {...}" line."""
    with open(jobscript, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# properties = "):
                return json.loads(line[len("# properties = "):])
    return {}


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def job_of(jobscript, props):
    """The one-task Cairn job of a Snakemake jobscript: threads as cores,
    mem_mib and disk_mib (else mem_mb and disk_mb, in MiB) as its request,
    runtime (minutes) as its wall limit."""
    res = props.get("resources") or {}
    resources = {"cores": max(1, _int(props.get("threads")) or 1)}
    for name, ours in (("mem", "memory_mib"), ("disk", "disk_mib")):
        mib, mb = _int(res.get(name + "_mib")), _int(res.get(name + "_mb"))
        if mib is None and mb is not None:
            mib = mb * 1000000 // (1 << 20)
        if mib is not None and mib >= 0:
            resources[ours] = mib
    limits = {}
    if _int(res.get("runtime")) and res["runtime"] > 0:
        limits["wall_seconds"] = res["runtime"] * 60
    name = props.get("rule") or props.get("groupid") or "job"
    attempts = int(os.environ.get("CAIRN_SNAKEMAKE_MAX_ATTEMPTS", "1"))
    extra = {"limits": limits} if limits else {}
    job = cairn.Job(f"snakemake-{name}", app=os.environ.get("CAIRN_SNAKEMAKE_APP", "jobscript"),
                    max_attempts=attempts, resources=resources, **extra)
    job.file("jobscript", path=jobscript)
    job.task("job", args=["-c", RUN], inputs=["jobscript"])
    return job


def submit(argv):
    """cairn-submit JOBSCRIPT: submits it, prints the job's id."""
    if not argv:
        fail("usage: cairn-submit JOBSCRIPT")
    jobscript = argv[-1]
    try:
        handle = cairn.Client().submit(job_of(jobscript, properties(jobscript)))
    except (cairn.CairnError, OSError, ValueError) as e:
        fail(f"submitting {jobscript}: {e}")
    print(handle.id)


def status(argv):
    """cairn-status JOB: running, success or failed. A master that cannot
    be reached for now (restarting) is answered running, with a warning:
    a status command that fails stops the whole workflow."""
    if len(argv) != 1:
        fail("usage: cairn-status JOB")
    client = cairn.Client(timeout=10)
    try:
        job = client.job(argv[0]).status()
    except cairn.NotFound:
        print("failed")
        sys.stderr.write(f"cairn snakemake profile: job {argv[0]} is no more on the master\n")
        return
    except (cairn.Unavailable, cairn.RateLimited, cairn.Overloaded) as e:
        sys.stderr.write(f"cairn snakemake profile: job {argv[0]}: {e}; taken as running\n")
        print("running")
        return
    except cairn.CairnError as e:
        fail(f"job {argv[0]}: {e}")
    state = job.get("state")
    if state == "running":
        print("running")
    elif state == "done":
        print("success")
    else:
        print("failed")
        why = f"job {argv[0]} {state}"
        try:
            for t in client.job(argv[0]).tasks():
                why += f": {t.get('reason') or 'no result'} after {t.get('attempts')} attempts"
                tail = (t.get("stderr") or "")[-4000:]
                if tail:
                    why += "; its stderr ends with:\n" + tail
        except cairn.CairnError:
            pass
        sys.stderr.write(f"cairn snakemake profile: {why}\n")


def cancel(argv):
    """cairn-cancel JOB...: cancels each (a finished or deleted one is left
    as it is)."""
    client = cairn.Client(timeout=2)
    bad = 0
    for job_id in argv:
        try:
            client.job(job_id).cancel()
        except (cairn.Conflict, cairn.NotFound):
            pass
        except (cairn.CairnError, ValueError) as e:
            sys.stderr.write(f"cairn snakemake profile: cancelling job {job_id}: {e}\n")
            bad = 1
    sys.exit(bad)
