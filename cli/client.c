/* client.c — shared plumbing of the admin subcommands. */
#include "common/protocol.h"
#include "common/sha256.h"
#include "common/termsafe.h"
#include "cli/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int cairn__client_parse(int *argc, char **argv, cairn__client_opts *o) {
  const char *token_file = NULL;
  o->server = getenv("CAIRN_SERVER");
  o->token = NULL;
  int w = 1;
  for (int i = 1; i < *argc; i++) {
    const char *a = argv[i];
    const char **dst = strcmp(a, "--server") == 0       ? &o->server
                       : strcmp(a, "--token") == 0      ? &o->token
                       : strcmp(a, "--token-file") == 0 ? &token_file
                                                        : NULL;
    if (!dst) {
      argv[w++] = argv[i];
      continue;
    }
    if (i + 1 >= *argc)
      return cairn__cli_fail("%s needs a value", a);
    *dst = argv[++i];
  }
  *argc = w;
  argv[w] = NULL;
  /* Precedence: --token, then $CAIRN_ADMIN_TOKEN, then --token-file. */
  if (!o->token && getenv("CAIRN_ADMIN_TOKEN") && *getenv("CAIRN_ADMIN_TOKEN"))
    o->token = getenv("CAIRN_ADMIN_TOKEN");
  if (!o->token && token_file) {
    FILE *f = fopen(token_file, "r");
    if (!f)
      return cairn__cli_fail("cannot read the token file %s", token_file);
    size_t n = fread(o->token_buf, 1, sizeof o->token_buf - 1, f);
    fclose(f);
    o->token_buf[n] = '\0';
    while (n && (o->token_buf[n - 1] == '\n' || o->token_buf[n - 1] == ' '))
      o->token_buf[--n] = '\0';
    o->token = o->token_buf;
  }
  if (!o->server || !*o->server)
    return cairn__cli_fail("no server: give --server URL or set CAIRN_SERVER");
  return 0;
}

cairn__http *cairn__client_connect(const cairn__client_opts *o) {
  cairn__http_global_init();
  cairn__http *h = cairn__http_create(o->server);
  if (!h) {
    cairn__cli_fail("out of memory");
    return NULL;
  }
  if (o->token)
    cairn__http_set_token(h, o->token);
  return h;
}

long cairn__client_json(cairn__http *h, const char *method, const char *path, const char *body,
                       json_t **out, int quiet_errors) {
  cairn__http_response r;
  cairn_error err = {0};
  *out = NULL;
  for (long waited = 0;;) {
    if (cairn__http_request(h, method, path, body ? "application/json" : NULL, body,
                           body ? strlen(body) : 0, 1u << 30, &r, &err) != CAIRN_OK) {
      cairn__buf_free(&r.body);
      cairn__cli_fail("%s", err.text);
      return -1;
    }
    /* 429 changed nothing: wait as the master says, then ask again */
    if (r.status != 429 || r.retry_after < 0 || waited >= CAIRN_CLI_RETRY_SECONDS)
      break;
    long wait = r.retry_after < 1 ? 1 : r.retry_after > 30 ? 30 : r.retry_after;
    waited += wait;
    fprintf(stderr, "cairn: %s %s: the master is busy (HTTP 429); retrying in %ld s\n", method,
            path, wait);
    cairn__buf_free(&r.body);
    sleep((unsigned)wait);
  }
  json_t *j = r.body.len ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
  if (r.status >= 400 && !quiet_errors) {
    json_t *msg = json_object_get(json_object_get(j, "error"), "message");
    char safe[1024];  /* the master's words, without control characters */
    cairn__termsafe(json_is_string(msg) ? json_string_value(msg)
                                       : (r.body.len ? r.body.data : "no details"),
                   safe, sizeof safe);
    cairn__cli_fail("%s %s: HTTP %ld: %s", method, path, r.status, safe);
  }
  cairn__buf_free(&r.body);
  *out = j;
  return r.status;
}

json_t *cairn__client_job_tasks(cairn__http *h, long long job) {
  json_t *all = json_array();
  long long after = 0;
  do {
    char path[128];
    json_t *page = NULL;
    if (after)
      snprintf(path, sizeof path, "/v1/jobs/%lld/tasks?limit=%d&after=%lld", job,
               CAIRN_TASKS_PAGE_MAX, after);
    else
      snprintf(path, sizeof path, "/v1/jobs/%lld/tasks?limit=%d", job, CAIRN_TASKS_PAGE_MAX);
    json_t *next = NULL;
    if (cairn__client_json(h, "GET", path, NULL, &page, 0) != 200 ||
        json_array_extend(all, json_object_get(page, "tasks")) ||
        !((next = json_object_get(page, "next")) == NULL || json_is_null(next) ||
          json_integer_value(next) > after)) {
      json_decref(page);
      json_decref(all);
      return NULL;
    }
    after = json_integer_value(next);
    json_decref(page);
  } while (after > 0);
  return json_pack("{s:o}", "tasks", all);
}

int cairn__client_hash_file(const char *path, char hex[65], long long *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  cairn__sha256 h;
  cairn__sha256_init(&h);
  char buf[65536];
  size_t n;
  *size = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    cairn__sha256_update(&h, buf, n);
    *size += (long long)n;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad)
    return -1;
  cairn__sha256_final_hex(&h, hex);
  return 0;
}

int cairn__client_upload(cairn__http *h, const char *path, const char *what, char hex[65],
                         long long *size) {
  if (cairn__client_hash_file(path, hex, size))
    return cairn__cli_fail("file \"%s\": cannot read %s", what, path), -1;
  char url[128];
  snprintf(url, sizeof url, "/v1/files/%s", hex);
  long status = 0;
  cairn_error err = {0};
  cairn__buf body;
  cairn__buf_init(&body, 1 << 16);
  int rc = 0;
  if (cairn__http_upload(h, url, path, &status, &body, &err) != CAIRN_OK ||
      (status != 200 && status != 201)) {
    json_t *e = body.len ? json_loadb(body.data, body.len, 0, NULL) : NULL;
    json_t *msg = json_object_get(json_object_get(e, "error"), "message");
    cairn__cli_fail("uploading %s: %s", path,
                    status ? (json_is_string(msg) ? json_string_value(msg) : "failed") : err.text);
    json_decref(e);
    rc = -1;
  }
  cairn__buf_free(&body);
  return rc;
}

const char *cairn__cli_take_opt(int *argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < *argc; i++)
    if (strcmp(argv[i], name) == 0) {
      const char *v = argv[i + 1];
      memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv);
      *argc -= 2;
      return v;
    }
  return NULL;
}

int cairn__cli_first_line(FILE *f, char *out, size_t cap) {
  if (!f || !fgets(out, (int)cap, f))
    return -1;
  size_t n = strcspn(out, "\r\n");
  if (n == strlen(out) && n == cap - 1)
    return -1; /* longer than cap allows */
  out[n] = '\0';
  return 0;
}

int cairn__cli_account_key(int *argc, char **argv, char *buf, size_t cap, const char **key) {
  *key = cairn__cli_take_opt(argc, argv, "--account-key");
  const char *file = cairn__cli_take_opt(argc, argv, "--account-key-file");
  if (!file)
    return 0;
  FILE *f = fopen(file, "r");
  int rc = cairn__cli_first_line(f, buf, cap);
  if (f)
    fclose(f);
  if (rc)
    return cairn__cli_fail("--account-key-file: %s holds no key on its first line", file);
  *key = buf;
  return 0;
}
