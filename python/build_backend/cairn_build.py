"""cairn_build.py -- a PEP 517 build backend made of the standard library,
so that `pip install ./python` works offline (pip gives a backend that
names no requirements an empty build environment: no setuptools, no
download). It builds the wheel of package cairn/ (pure Python, py3-none-
any) with the runner runner/cairn-app-python as a script, an sdist, and
an editable wheel (PEP 660: a .pth file naming this folder). The name,
description, Python requirement and licence come from pyproject.toml's
[project] table (simple `key = "value"` lines), the version from
cairn/__init__.py's __version__."""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "cairn"
SCRIPTS = ["runner/cairn-app-python"]


def _project():
    meta, section = {}, None
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[project]":
                m = re.match(r'([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', line)
                if m:
                    meta[m.group(1)] = m.group(2)
                m = re.match(r'license\s*=\s*\{\s*text\s*=\s*"([^"]*)"\s*\}\s*$', line)
                if m:
                    meta["license"] = m.group(1)
    with open(os.path.join(HERE, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        meta["version"] = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)
    return meta


def _metadata(meta):
    return ("Metadata-Version: 2.1\n"
            f"Name: {meta['name']}\n"
            f"Version: {meta['version']}\n"
            f"Summary: {meta.get('description', '')}\n"
            f"License: {meta.get('license', '')}\n"
            f"Requires-Python: {meta.get('requires-python', '>=3')}\n"
            "Provides-Extra: cloudpickle\n"
            "Requires-Dist: cloudpickle; extra == \"cloudpickle\"\n")


def _dist_info(meta):
    return f"{meta['name']}-{meta['version']}.dist-info"


def _package_files():
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                out.append((os.path.relpath(path, HERE), path))
    return out


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        if isinstance(data, str):
            data = data.encode()
        info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self, dist_info):
        self.record.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def _build(wheel_directory, editable):
    meta = _project()
    name = f"{meta['name']}-{meta['version']}-py3-none-any.whl"
    di = _dist_info(meta)
    w = _Wheel(os.path.join(wheel_directory, name))
    if editable:
        w.add(f"__editable__.{meta['name']}.pth", HERE + "\n")
    else:
        for arcname, path in _package_files():
            with open(path, "rb") as f:
                w.add(arcname, f.read())
    data = f"{meta['name']}-{meta['version']}.data/scripts"
    for s in SCRIPTS:
        with open(os.path.join(HERE, s), "rb") as f:
            w.add(f"{data}/{os.path.basename(s)}", f.read(), 0o755)
    w.add(f"{di}/METADATA", _metadata(meta))
    w.add(f"{di}/WHEEL", "Wheel-Version: 1.0\nGenerator: cairn_build\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n")
    w.close(di)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    meta = _project()
    di = _dist_info(meta)
    os.makedirs(os.path.join(metadata_directory, di), exist_ok=True)
    with open(os.path.join(metadata_directory, di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(meta))
    return di


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    meta = _project()
    base = f"{meta['name']}-{meta['version']}"
    name = base + ".tar.gz"
    files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
             ("build_backend/cairn_build.py", os.path.abspath(__file__))]
    files += _package_files() + [(s, os.path.join(HERE, s)) for s in SCRIPTS]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for arcname, path in files:
            info = t.gettarinfo(path, f"{base}/{arcname}")
            info.mtime, info.uid, info.gid, info.uname, info.gname = time.time(), 0, 0, "", ""
            with open(path, "rb") as f:
                t.addfile(info, f)
        pkg = _metadata(meta).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mtime = len(pkg), time.time()
        t.addfile(info, io.BytesIO(pkg))
    return name
