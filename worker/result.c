/* result.c — encode and deliver task results. */
#include "worker/result.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/log.h"
#include "common/protocol.h"
#include "worker/backoff.h"

/* Sets root[key] to bytes p (as text when UTF-8 without NUL, else base64
 * with root[enc_key] = "base64"). 0, or -1 out of memory. */
static int set_bytes(json_t *root, const char *key, const char *enc_key, const void *p,
                     size_t len) {
  const char *s = len ? p : "";
  json_t *text = NULL;
  /* json_stringn refuses invalid UTF-8; NUL bytes would trouble readers. */
  if (!memchr(s, '\0', len))
    text = json_stringn(s, len);
  if (!text) {
    size_t n = cairn__base64_encoded_len(len);
    char *b64 = n == (size_t)-1 ? NULL : malloc(n + 1);
    if (!b64)
      return -1;
    cairn__base64_encode(s, len, b64);
    text = json_stringn(b64, n);
    free(b64);
    if (!text || json_object_set_new(root, enc_key, json_string("base64")) != 0) {
      json_decref(text);
      return -1;
    }
  }
  return json_object_set_new(root, key, text);
}

json_t *cairn__result_obj(int exit_status, const char *reason, const void *output, size_t len,
                          int next, const cairn__outputs *x, double cpu_seconds,
                          const cairn__usage *usage) {
  json_t *root = json_object();
  if (!root)
    return NULL;
  if (set_bytes(root, "output", "encoding", output, len))
    goto out;
  if (x && x->err_tail.len &&
      set_bytes(root, "stderr", "stderr_encoding", x->err_tail.data, x->err_tail.len))
    goto out;
  if (x && x->nfiles) {
    json_t *files = json_array();
    for (size_t i = 0; files && i < x->nfiles; i++) {
      json_t *e = json_pack("{s:s, s:s, s:I}", "name", x->files[i].name, "sha256",
                            x->files[i].sha256, "size", (json_int_t)x->files[i].size);
      if (e && i < x->nchunks && x->chunks[i]) /* kept, to a master listing "kept_chunks" */
        json_object_set(e, "chunks", x->chunks[i]);
      json_array_append_new(files, e);
    }
    if (!files || json_object_set_new(root, "outputs", files) != 0)
      goto out;
  }
  if (json_object_set_new(root, "exit_status", json_integer(exit_status)) != 0)
    goto out;
  if (next && json_object_set_new(root, "next", json_true()) != 0)
    goto out;
  if (reason && *reason && json_object_set_new(root, "reason", json_string(reason)) != 0)
    goto out;
  if (cpu_seconds >= 0 && /* at most the master's cap: a longer run claims the cap */
      json_object_set_new(root, CAIRN_CPU_KEY, json_real(cpu_seconds < CAIRN_MAX_CPU_SECONDS
                                                           ? cpu_seconds
                                                           : CAIRN_MAX_CPU_SECONDS)) != 0)
    goto out;
  if (usage && cairn__usage_any(usage) &&
      json_object_set_new(root, CAIRN_USAGE_KEY, cairn__usage_json(usage)) != 0)
    goto out;
  return root;
out:
  json_decref(root);
  return NULL;
}

char *cairn__result_json(int exit_status, const char *reason, const void *output, size_t len,
                         int next, const cairn__outputs *x, double cpu_seconds,
                         const cairn__usage *usage) {
  json_t *root = cairn__result_obj(exit_status, reason, output, len, next, x, cpu_seconds, usage);
  char *body = root ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  return body;
}

/* Sends body by method to path until delivered, refused or abandoned (as
 * cairn__result_deliver says), or after one try when once (UNREACHABLE
 * where it would try again); what names it in the log. */
static cairn__delivery send_body(cairn__session *s, cairn__conn *c, const char *method,
                                 const char *path, const char *what, const char *body,
                                 size_t max_answer, cairn__buf *answer, long *status_out,
                                 int once, cairn_error *err) {
  char msg[300];
  cairn__backoff b;
  cairn__backoff_init(&b, 100, 5000);
  if (answer)
    cairn__buf_init(answer, max_answer);
  for (;;) {
    cairn__http_response resp = {0};
    cairn_status rc = cairn__session_request(s, c, method, path, body, max_answer, &resp, err);
    long status = resp.status;
    *status_out = rc == CAIRN_OK ? status : 0;
    if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL) {
      cairn__buf_free(&resp.body);
      return CAIRN__FATAL;
    }
    if (rc == CAIRN_OK && (status == 200 || status == 201)) {
      if (answer)
        *answer = resp.body;
      else
        cairn__buf_free(&resp.body);
      return CAIRN__DELIVERED;
    }
    if (rc == CAIRN_OK)
      cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    cairn__buf_free(&resp.body);
    if (rc == CAIRN_OK && !cairn__transient(rc, status)) {
      cairn__error_set(err, CAIRN_ECONFLICT, "%s %s: HTTP %ld: %s", method, path, status, msg);
      return CAIRN__DROPPED;
    }
    if (rc == CAIRN_OK)
      cairn__error_set(err, CAIRN_EIO, "%s %s: HTTP %ld: %s", method, path, status, msg);
    if (once)
      return CAIRN__UNREACHABLE;
    CAIRN_WARN(s->log, "%s not delivered yet: %s (retrying)", what, err->text);
    if (cairn__stopper_sleep_until_stop(s->stopper, cairn__backoff_next(&b)))
      return CAIRN__ABANDONED;
  }
}

cairn__delivery cairn__result_deliver(cairn__session *s, cairn__conn *c, long long index,
                                      const char *body, size_t max_answer, cairn__buf *answer,
                                      long *status_out, cairn_error *err) {
  char path[64], what[64];
  snprintf(path, sizeof path, "/v1/results/%lld", index);
  snprintf(what, sizeof what, "result %lld", index);
  return send_body(s, c, "PUT", path, what, body, max_answer, answer, status_out, 0, err);
}

cairn__delivery cairn__result_try(cairn__session *s, cairn__conn *c, long long index,
                                  const char *body, size_t max_answer, cairn__buf *answer,
                                  long *status_out, cairn_error *err) {
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld", index);
  return send_body(s, c, "PUT", path, "", body, max_answer, answer, status_out, 1, err);
}

cairn__delivery cairn__results_deliver(cairn__session *s, cairn__conn *c, size_t n,
                                       const char *body, size_t max_answer, cairn__buf *answer,
                                       long *status_out, cairn_error *err) {
  char what[64];
  snprintf(what, sizeof what, "a batch of %zu results", n);
  return send_body(s, c, "POST", "/v1/results", what, body, max_answer, answer, status_out, 0,
                   err);
}
