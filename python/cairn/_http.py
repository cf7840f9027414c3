"""_http.py -- the package's HTTP to one master: a keep-alive connection per
thread (http.client is not thread-safe; a Client is), TLS with a CA file,
the admin token, the master's error bodies turned into exceptions
(errors.py), and the waits a busy master asks for (429, or 503 with
Retry-After: sent again after the wait, for up to 60 s in all, as the
``cairn`` command does; docs/cli.md).

A request on a kept-alive connection that the master closed while it was
idle (it closes idle connections after 15 s, docs/security.md) fails
before any answer: it is sent once more on a new connection. Only then:
a request that got any answer, or failed on a fresh connection, is not
sent again."""

import hashlib
import http.client
import json
import os
import tempfile
import threading
import time
import urllib.parse

from . import errors

# How long the waits of a busy master may add up to, per request (seconds).
BUSY_WAIT_TOTAL = 60.0
# Bytes read or sent at once when streaming a file.
CHUNK = 1 << 16
# Files larger than this are first asked for (HEAD) before they are sent.
SKIP_CHECK = 1 << 20

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError)


class Response:
    """A whole answer: status, headers (lower-case names) and body bytes."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body) if self.body else None


class Transport:
    """The connections of one Client to one master."""

    def __init__(self, url, token=None, ca_file=None, timeout=60.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise errors.InvalidInput(f"server URL {url!r}: want http://HOST[:PORT] or https://...")
        self.url = url
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port
        self.prefix = u.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.context = None
        if self.scheme == "https":
            import ssl  # only for https: it takes a while to load
            self.context = ssl.create_default_context(cafile=ca_file)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all = []  # every connection made, to close them all

    # -- connections ---------------------------------------------------------
    def _conn(self, fresh=False):
        c = getattr(self._local, "conn", None)
        if c is not None and fresh:
            c.close()
        if c is None:
            if self.scheme == "https":
                c = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                context=self.context)
            else:
                c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            c.cairn_used = False
            self._local.conn = c
            with self._lock:
                self._all.append(c)
        return c

    def close(self):
        with self._lock:
            conns, self._all = self._all, []
        for c in conns:
            c.close()

    def _headers(self, content_type=None, length=None):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if content_type:
            h["Content-Type"] = content_type
        if length is not None:
            h["Content-Length"] = str(length)
        return h

    def _send(self, method, path, body, headers, timeout):
        """Sends one request and returns the open http.client response."""
        for attempt in (0, 1):
            c = self._conn()
            reused = c.cairn_used
            c.timeout = timeout or self.timeout
            if c.sock is not None:
                c.sock.settimeout(c.timeout)
            try:
                if hasattr(body, "seek"):
                    body.seek(0)
                c.request(method, self.prefix + path, body=body, headers=headers)
                r = c.getresponse()
                c.cairn_used = True
                return r
            except _STALE as e:
                c.close()
                self._local.conn = None
                if reused and attempt == 0:
                    continue  # the master closed the idle connection: once more
                raise errors.Unavailable(f"the master at {self.url} closed the connection: {e}",
                                         method=method, path=path) from e
            except (OSError, http.client.HTTPException) as e:
                c.close()
                self._local.conn = None
                raise errors.Unavailable(f"cannot reach the master at {self.url}: {e}",
                                         method=method, path=path) from e
        raise AssertionError("unreachable")

    # -- requests ------------------------------------------------------------
    def request(self, method, path, body=None, content_type=None, timeout=None, length=None):
        """One request, its whole answer read; a busy master's wait honoured.
        Raises the exception of an error answer (>= 400)."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            content_type = "application/json"
        if isinstance(body, (bytes, bytearray)):
            length = len(body)
        waited = 0.0
        while True:
            r = self._send(method, path, body, self._headers(content_type, length), timeout)
            try:
                data = r.read()
            except (OSError, http.client.HTTPException) as e:
                self._local.conn = None
                raise errors.Unavailable(f"reading the answer of the master at {self.url}: {e}",
                                         method=method, path=path) from e
            resp = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
            wait = self._busy_wait(resp)
            if wait is None or waited + wait > BUSY_WAIT_TOTAL:
                break
            waited += wait
            time.sleep(wait)
        if resp.status >= 400:
            raise self.error(resp, method, path)
        return resp

    def json(self, method, path, body=None, timeout=None):
        return self.request(method, path, body, timeout=timeout).json()

    @staticmethod
    def _busy_wait(resp):
        """Seconds to wait before sending again a request the master did not
        take (429, or 503 naming a wait), else None."""
        if resp.status not in (429, 503):
            return None
        ms = resp.headers.get("cairn-retry-after-ms")
        s = resp.headers.get("retry-after")
        try:
            if ms is not None:
                return max(0.001, int(ms) / 1000.0)
            if s is not None:
                return min(30.0, max(1.0, float(int(s))))
        except ValueError:
            pass
        return None

    def error(self, resp, method, path):
        code, message = None, None
        try:
            e = json.loads(resp.body).get("error") or {}
            code, message = e.get("code"), e.get("message")
        except (ValueError, AttributeError):
            pass
        if not isinstance(message, str):
            message = resp.body[:512].decode("utf-8", "replace").strip() or "no details"
        exc = errors.from_response(resp.status, code, message, method, path)
        if isinstance(exc, errors.RateLimited):
            exc.retry_after = self._busy_wait(resp)
        return exc

    # -- files ---------------------------------------------------------------
    def upload_file(self, path):
        """PUT /v1/files/{sha256} with the bytes of the file at path, which
        is hashed first; (sha256, size). A file over SKIP_CHECK bytes that
        the master holds already (HEAD answers 200) is not sent again."""
        h = hashlib.sha256()
        size = 0
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(CHUNK), b""):
                h.update(block)
                size += len(block)
            sha = h.hexdigest()
            if size > SKIP_CHECK:
                try:
                    self.request("HEAD", "/v1/files/" + sha)
                    return sha, size
                except errors.NotFound:
                    pass
            self.request("PUT", "/v1/files/" + sha, f, "application/octet-stream",
                         timeout=max(self.timeout, size / (1 << 20) + 60), length=size)
        return sha, size

    def upload_bytes(self, data):
        sha = hashlib.sha256(data).hexdigest()
        self.request("PUT", "/v1/files/" + sha, bytes(data), "application/octet-stream")
        return sha, len(data)

    def download(self, path, dest, sha256=None, limit=4 << 30):
        """GET path into the file dest (written to a temporary file next to
        it, renamed once whole), hashed as it arrives; (sha256, size).
        A digest other than sha256 (when given) keeps nothing."""
        r = self._send("GET", path, None, self._headers(), None)
        if r.status >= 400:
            resp = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
            raise self.error(resp, "GET", path)
        folder = os.path.dirname(os.path.abspath(dest))
        fd, tmp = tempfile.mkstemp(prefix=".cairn-download-", dir=folder)
        h = hashlib.sha256()
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while True:
                    try:
                        block = r.read(CHUNK)
                    except (OSError, http.client.HTTPException) as e:
                        self._local.conn = None
                        raise errors.Unavailable(f"downloading {path}: {e}", method="GET",
                                                 path=path) from e
                    if not block:
                        break
                    size += len(block)
                    if size > limit:
                        self._local.conn = None
                        raise errors.TooLarge(f"downloading {path}: more than {limit} bytes",
                                              method="GET", path=path)
                    h.update(block)
                    out.write(block)
            digest = h.hexdigest()
            if sha256 is not None and digest != sha256:
                raise errors.Unavailable(f"downloading {path}: the bytes hash to {digest}, "
                                         f"not {sha256}: nothing kept", method="GET", path=path)
            os.replace(tmp, dest)
            tmp = None
            return digest, size
        finally:
            if tmp is not None:
                os.unlink(tmp)
