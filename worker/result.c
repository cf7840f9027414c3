/* result.c — encode and deliver task results. */
#include "worker/result.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/log.h"
#include "worker/backoff.h"

char *cairn__result_json(int exit_status, const char *reason, const void *output, size_t len,
                         int next) {
  json_t *root = json_object();
  json_t *text = NULL;
  char *b64 = NULL, *body = NULL;
  const char *out = len ? output : "";
  if (!root)
    return NULL;
  /* json_stringn refuses invalid UTF-8; NUL bytes would trouble readers. */
  if (!memchr(out, '\0', len))
    text = json_stringn(out, len);
  if (!text) {
    size_t n = cairn_base64_encoded_len(len);
    b64 = n == (size_t)-1 ? NULL : malloc(n + 1);
    if (!b64)
      goto out;
    cairn_base64_encode(out, len, b64);
    text = json_stringn(b64, n);
    if (!text || json_object_set_new(root, "encoding", json_string("base64")) != 0)
      goto out;
  }
  if (json_object_set_new(root, "exit_status", json_integer(exit_status)) != 0)
    goto out;
  if (json_object_set_new(root, "output", text) != 0) {
    text = NULL;
    goto out;
  }
  text = NULL;
  if (next && json_object_set_new(root, "next", json_true()) != 0)
    goto out;
  if (reason && *reason && json_object_set_new(root, "reason", json_string(reason)) != 0)
    goto out;
  body = json_dumps(root, JSON_COMPACT);
out:
  json_decref(text);
  json_decref(root);
  free(b64);
  return body;
}

cairn__delivery cairn__result_deliver(cairn__session *s, cairn__conn *c, long long index,
                                      const char *body, size_t max_answer, cairn_buf *answer,
                                      long *status_out, cairn_error *err) {
  char path[64], msg[300];
  cairn__backoff b;
  snprintf(path, sizeof path, "/v1/results/%lld", index);
  cairn__backoff_init(&b, 100, 5000);
  if (answer)
    cairn_buf_init(answer, max_answer);
  for (;;) {
    cairn_http_response resp = {0};
    cairn_status rc = cairn__session_request(s, c, "PUT", path, body, max_answer, &resp, err);
    long status = resp.status;
    *status_out = rc == CAIRN_OK ? status : 0;
    if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL) {
      cairn_buf_free(&resp.body);
      return CAIRN__FATAL;
    }
    if (rc == CAIRN_OK && (status == 200 || status == 201)) {
      if (answer)
        *answer = resp.body;
      else
        cairn_buf_free(&resp.body);
      return CAIRN__DELIVERED;
    }
    if (rc == CAIRN_OK)
      cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    cairn_buf_free(&resp.body);
    if (rc == CAIRN_OK && !cairn__transient(rc, status)) {
      cairn_error_set(err, CAIRN_ECONFLICT, "PUT %s: HTTP %ld: %s", path, status, msg);
      return CAIRN__DROPPED;
    }
    if (rc == CAIRN_OK)
      cairn_error_set(err, CAIRN_EIO, "PUT %s: HTTP %ld: %s", path, status, msg);
    CAIRN_WARN(s->log, "result %lld not delivered yet: %s (retrying)", index, err->text);
    if (cairn__stopper_sleep_until_stop(s->stopper, cairn__backoff_next(&b)))
      return CAIRN__ABANDONED;
  }
}
