"""The package itself, without a master: its version is Cairn's, it has one
exception class per cairn_status with the status's wire code, and `pip
install ./python` builds and installs it with no network (the in-tree
backend needs nothing but the standard library)."""

import os
import re
import subprocess
import sys

import cairn
from cairn import errors
from conftest import SOURCE


def read(*parts):
    with open(os.path.join(SOURCE, *parts), encoding="utf-8") as f:
        return f.read()


def test_version_is_cairns():
    m = re.search(r'#define CAIRN_VERSION_STRING "([^"]+)"', read("include", "cairn", "cairn.h"))
    assert cairn.__version__ == m.group(1)


def test_one_class_per_status_with_its_code():
    enum = re.search(r"typedef enum cairn_status \{(.*?)\} cairn_status;",
                     read("include", "cairn", "cairn.h"), re.S).group(1)
    statuses = [s for s in re.findall(r"\b(CAIRN_[A-Z]+)\b", enum) if s != "CAIRN_OK"]
    codes = dict(re.findall(r'case (CAIRN_[A-Z]+): return "([a-z_]+)";',
                            read("common", "error.c").split("cairn__status_code")[1]))
    classes = {c.cairn_status: c for c in errors.STATUS_CLASSES}
    assert sorted(classes) == sorted(statuses)
    for s in statuses:
        assert classes[s].code == codes[s], s
        assert issubclass(classes[s], cairn.CairnError)
        assert errors.from_response(400, codes[s], "m").__class__ is classes[s]
    # a code of its own (a refused registration's) goes by its HTTP status
    assert isinstance(errors.from_response(403, "invitation_invalid", "m"), cairn.Forbidden)
    assert isinstance(cairn.Timeout("x"), TimeoutError)


def test_pip_installs_it_offline(tmp_path):
    env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--target",
                        str(target), os.path.join(SOURCE, "python")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (target / "cairn" / "executor.py").is_file()
    assert os.access(target / "bin" / "cairn-app-python", os.X_OK)
    (info,) = list(target.glob("cairn-*.dist-info"))
    assert f"Version: {cairn.__version__}" in (info / "METADATA").read_text()
    r = subprocess.run([sys.executable, "-c", "import cairn, sys; print(cairn.__file__)"],
                       env=dict(env, PYTHONPATH=str(target)), cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(str(target)), r.stdout + r.stderr
