/* fuzz_worker.c — libFuzzer target: the worker's readers of every master
 * answer (worker/). Byte 0 picks the answer; the rest is its body:
 *   0: POST /v1/volunteers (cairn__registration_parse)
 *   1: POST /v1/work, one offer (cairn__task_parse)
 *   2: PUT /v1/results/{i} with "next" (cairn__task_parse_next)
 *   3: a batch answer of POST /v1/work or POST /v1/results: its "results"
 *      statuses and each of its "tasks" (cairn__task_from_json)
 *   4: POST /v1/heartbeat (cairn__heartbeat_parse)
 *   5: an error body (cairn__server_message)
 *   6: a signed app version's manifest (cairn__app_manifest_parse, common/appsig.h)
 * An offer refused must say why; one accepted is freed whole. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/appsig.h"
#include "worker/credentials.h"
#include "worker/task.h"
#include "worker/worker_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void offer_done(cairn__task *t, const cairn_error *err) {
  if (!t && !err->text[0])
    abort(); /* a refusal names its problem */
  cairn__task_free(t);
}

static void batch(const char *body, size_t len) {
  json_t *root = json_loadb(body, len, 0, NULL);
  json_t *list = json_object_get(root, "results");
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *e = json_array_get(list, i);
    long st = (long)json_integer_value(json_object_get(e, "status"));
    (void)st;
    (void)json_string_value(json_object_get(json_object_get(e, "error"), "message"));
  }
  json_t *tasks = json_object_get(root, "tasks");
  for (size_t i = 0; i < json_array_size(tasks); i++) {
    cairn_error err = {0};
    long long index = -1;
    offer_done(cairn__task_from_json(json_array_get(tasks, i), &index, &err), &err);
  }
  json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  cairn_error err = {0};
  long long index = -1;
  switch (data[0] % 7) {
  case 0: {
    cairn__credentials c;
    if (cairn__registration_parse(body, len, "http://127.0.0.1:1", &c, &err) != CAIRN_OK &&
        !err.text[0])
      abort();
    cairn__credentials_clear(&c);
    break;
  }
  case 1:
    offer_done(cairn__task_parse(body, len, &index, &err), &err);
    break;
  case 2: {
    int present = 0;
    cairn__task *t = cairn__task_parse_next(body, len, &present, &index, &err);
    if (t && !present)
      abort(); /* an offer only from a "next" member */
    if (present)
      offer_done(t, &err);
    break;
  }
  case 3:
    batch(body, len);
    break;
  case 6: {
    static cairn__app_manifest m;
    cairn_status st = cairn__app_manifest_parse(body, len, &m, &err);
    if ((st != CAIRN_OK && !err.text[0]) || (st == CAIRN_OK && (m.nfiles == 0 || !m.files[0].exec)))
      abort(); /* a refusal names its problem; a manifest has its executable first */
    break;
  }
  case 4: {
    static cairn__peerstate peers;
    static int ready;
    if (!ready && cairn__peerstate_init(&peers, NULL) == 0)
      ready = 1;
    if (!ready)
      abort();
    long long *ext = NULL;
    long n = cairn__heartbeat_parse(body, len, &ext, &peers);
    if (n >= 0 && !ext)
      abort();
    free(ext);
    break;
  }
  default: {
    char msg[300];
    cairn__server_message(body, len, msg, sizeof msg);
    if (strlen(msg) >= sizeof msg || strchr(msg, '\n'))
      abort();
  }
  }
  return 0;
}
