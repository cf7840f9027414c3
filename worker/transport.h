/* transport.h — the HTTP client used by the worker and the CLI (libcurl).
 * Only transport.c includes curl/curl.h. One handle keeps its connection
 * alive between requests (keep-alive reuse). A handle is not thread-safe:
 * use one per thread.
 */
#ifndef CAIRN_TRANSPORT_H
#define CAIRN_TRANSPORT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"
#include "worker/backoff.h"

typedef struct cairn__http cairn__http;

typedef struct cairn__http_response {
  long status;       /* HTTP status, 0 if no response arrived */
  long retry_after;  /* seconds from a Retry-After header, -1 without one */
  long retry_after_ms; /* milliseconds from a Cairn-Retry-After-Ms header, -1 without */
  cairn__buf body;    /* capped at the max given to the request */
} cairn__http_response;

/* base: "http://host:port" (no trailing slash needed). Returns NULL on OOM. */
cairn__http *cairn__http_create(const char *base);
void cairn__http_delete(cairn__http *h);
/* A new handle (the caller owns it: cairn__http_delete) made like h: the
 * same base URL, token, timeout, stall timeout, download limit and pace
 * (still borrowed, shared with h); TLS settings come from the environment
 * for every handle alike (CAIRN_CA_FILE). Not copied: h's connection, its
 * cancel callback and observer (set them on the clone) and its last
 * download's fault. Lets another thread talk to the same master while h
 * is in use. NULL on OOM. */
cairn__http *cairn__http_clone(const cairn__http *h);
const char *cairn__http_base(const cairn__http *h);
/* Bearer token sent with every request to base (copied); NULL clears it.
 * It never goes to another origin: a peer source carries its grant in its
 * URL (common/grant.h). */
void cairn__http_set_token(cairn__http *h, const char *token);
/* Per-request timeout in seconds (default 30). */
void cairn__http_set_timeout(cairn__http *h, long seconds);
/* cairn__http_download() gives up ("stalled") when no byte arrived for ms
 * milliseconds, connecting included (default 10000; checked about once a
 * second, so the real bound is up to a second longer; a connection not made
 * within ms counts as stalled too). */
void cairn__http_set_stall_timeout(cairn__http *h, long ms);
long cairn__http_stall_timeout(const cairn__http *h);
/* While set, every transfer asks cancelled(ud) a few times a second and is
 * aborted (CAIRN_EIO, "cancelled") when it returns non-zero. NULL clears. */
void cairn__http_set_cancel(cairn__http *h, int (*cancelled)(void *ud), void *ud);

/* While set, fn(ud, p, n) sees the bytes of every download through h
 * after they were written (and flushed) to its file; a non-zero return
 * ends the download: CAIRN_EINVAL, fault CAIRN_FAIL_DIGEST (the observer
 * found bytes that do not match, worker/relay.h). NULL clears. */
void cairn__http_set_observer(cairn__http *h, int (*fn)(void *ud, const void *p, size_t n),
                             void *ud);
/* Caps each download through h at bytes_per_second (0: no cap). */
void cairn__http_set_download_limit(cairn__http *h, long long bytes_per_second);

/* Every request, download and upload to base then waits its turn and
 * honours a 429 or 503 that names a wait (backoff.h: the pace, shared by
 * every handle of one worker, borrowed, outliving h); a wait cut short by
 * the cancel callback fails the call (CAIRN_EIO, "cancelled"). Calls to
 * other origins (peers) are not paced. NULL: calls go at once. */
void cairn__http_set_pace(cairn__http *h, cairn__pace *pace);

/* Sends method to path (absolute "/v1/..." joined to base, or a full URL),
 * with body (may be NULL) as content_type. Fills resp (caller calls
 * cairn__buf_free(&resp->body)). Returns CAIRN_OK when any HTTP response
 * arrived (check resp->status), CAIRN_EIO with err set when none did, and
 * CAIRN_ETOOBIG when the response exceeded max_response bytes. */
cairn_status cairn__http_request(cairn__http *h, const char *method, const char *path,
                                const char *content_type, const void *body, size_t body_len,
                                size_t max_response, cairn__http_response *resp, cairn_error *err);

/* Downloads path into the file at dest (created 0644, truncated), verifying
 * the SHA-256 of what arrives against sha256 (64 hex) when not NULL. On any
 * failure the file is removed. Returns CAIRN_OK; CAIRN_EINVAL when all bytes
 * arrived but their SHA-256 differs; CAIRN_ETOOBIG past max_bytes;
 * CAIRN_EIO otherwise (no answer, non-200 answer in *status, transfer broken
 * or stalled: *status is then 0). */
cairn_status cairn__http_download(cairn__http *h, const char *path, const char *dest,
                                 const char *sha256, unsigned long long max_bytes,
                                 long *status, cairn_error *err);
/* cairn__http_download() from byte offset, for a copy broken off after
 * checked bytes: dest's first offset bytes are kept as the file's start
 * (hashed again for the SHA-256, which covers the whole file; the rest of
 * dest is cut) and the source is asked for the rest (Range: bytes=OFFSET-).
 * A 206 whose Content-Range starts at offset is appended (*status 200, as
 * for a whole copy); a 200 (a source that ignores Range) is read from byte
 * 0 and its first offset bytes are dropped; a 206 that starts elsewhere is
 * CAIRN_EIO, fault STATUS. max_bytes counts the whole file; the observer
 * sees the bytes after offset only. Unlike cairn__http_download(), dest is
 * left as it is on failure (the caller resumes again or removes it).
 * offset 0: a whole download into dest. */
cairn_status cairn__http_download_at(cairn__http *h, const char *path, const char *dest,
                                    const char *sha256, unsigned long long max_bytes,
                                    unsigned long long offset, long *status, cairn_error *err);
/* Why the last cairn__http_download() through h failed when the server is to
 * blame, as a CAIRN_FAIL_* reason of common/protocol.h: UNREACHABLE (no
 * connection, or the transfer broke), STALLED (the stall timeout), STATUS
 * (an answer other than 200), SIZE (past max_bytes), DIGEST (everything
 * arrived, SHA-256 wrong; a caller that knows the size tells a short or
 * long copy from a corrupt one with *received). -1 after a success, and
 * after a local failure: dest could not be created or written, out of
 * memory, cancelled. *received (may be NULL): the bytes that arrived. */
int cairn__http_download_fault(const cairn__http *h, unsigned long long *received);

/* Uploads the file at src with PUT to path, streaming it. */
cairn_status cairn__http_upload(cairn__http *h, const char *path, const char *src, long *status,
                               cairn__buf *resp_body, cairn_error *err);

/* Copies the local IP address of the last connection h made (the address
 * this host has towards that server) into out. Returns 0, or -1 when h has
 * not connected yet or the address does not fit. */
int cairn__http_local_ip(cairn__http *h, char *out, size_t len);

/* Call once at program start before threads (curl_global_init). */
void cairn__http_global_init(void);

#endif
