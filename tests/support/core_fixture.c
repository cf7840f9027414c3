/* core_fixture.c — see core_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "plan/jobspec.h"
#include "tests/support/core_fixture.h"

cairn__core *core_fixture_open(core_fixture *f) {
  cairn_error err = {0};
  cairn__logger quiet;
  cairn__logger_init(&quiet, CAIRN_LOG_ERROR, NULL, NULL);
  cairn__core *c = cairn__core_open(f->db, 0, NULL, &quiet, -1, &err);
  if (!c)
    fail_msg("cannot open the core on %s: %s", f->db, err.text);
  return c;
}

void core_fixture_reopen(core_fixture *f) {
  cairn__core_close(f->c);
  f->c = core_fixture_open(f);
}

int core_fixture_setup(void **state) {
  core_fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/cairn-core-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(f->dir)) {
    free(f);
    return -1;
  }
  snprintf(f->db, sizeof f->db, "%s/cairn.db", f->dir);
  *state = f;
  f->c = core_fixture_open(f);
  return 0;
}

int core_fixture_teardown(void **state) {
  core_fixture *f = *state;
  cairn__core_close(f->c);
  char p[400];
  static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    snprintf(p, sizeof p, "%s%s", f->db, suffix[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s.files", f->db);
  rmdir(p);
  int rc = rmdir(f->dir);
  free(f);
  return rc;
}

int64_t core_fixture_submit(cairn__core *c, const char *text) {
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
  if (!spec)
    fail_msg("job rejected: %s", err.text);
  int64_t id = 0;
  if (cairn__core_submit(c, spec, &id, &err) != CAIRN_OK)
    fail_msg("submit: %s", err.text);
  return id;
}

int64_t core_fixture_register(cairn__core *c, const char *name, const char *team, int slots) {
  char *apps[] = {"sum"}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register_team(c, name, "rack", apps, 1, slots, NULL, team, &id, token, &err) !=
      CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

int64_t core_fixture_take(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  int retry = 0;
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &retry, &err) != CAIRN_OK || !w)
    fail_msg("no work for %lld: %s", (long long)v, err.text);
  int64_t idx = (int64_t)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  return idx;
}

void core_fixture_result(cairn__core *c, int64_t v, int64_t idx, const char *out, double cpu) {
  cairn_error err = {0};
  cairn__result_extra x = {.cpu_seconds = cpu, .has_cpu = cpu >= 0};
  if (cairn__core_result(c, v, idx, 0, NULL, out, strlen(out), &x, NULL, &err) != CAIRN_OK)
    fail_msg("result for %lld: %s", (long long)idx, err.text);
}

int64_t core_fixture_broadcast_job(cairn__core *c, const char *sha, int64_t size, int ntasks) {
  int existed = 1;
  cairn_error err = {0};
  if (cairn__core_add_file(c, sha, size, &existed, &err) != CAIRN_OK)
    fail_msg("add file: %s", err.text);
  json_t *tasks = json_array();
  for (int k = 0; k < ntasks; k++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", k);
    json_array_append_new(tasks, json_pack("{s:s, s:[s]}", "id", id, "inputs", "big.bin"));
  }
  json_t *job = json_pack("{s:s, s:s, s:[{s:s, s:s, s:b}], s:o}", "app", "big", "policy", "fifo",
                          "files", "name", "big.bin", "sha256", sha, "broadcast", 1, "tasks",
                          tasks);
  char *text = json_dumps(job, JSON_COMPACT);
  json_decref(job);
  int64_t id = core_fixture_submit(c, text);
  free(text);
  return id;
}

void core_fixture_heartbeat(cairn__core *c, int64_t v, cairn__report *r) {
  json_t *hb = NULL;
  cairn_error err = {0};
  r->fields |= CAIRN_FEAT_RUNNING;
  r->nrunning = 0;
  if (cairn__core_heartbeat(c, v, r, &hb, &err) != CAIRN_OK)
    fail_msg("heartbeat of %lld: %s", (long long)v, err.text);
  json_decref(hb);
}

void core_fixture_have(cairn__core *c, int64_t v, const char *sha) {
  static cairn__report r; /* large: not on the stack */
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_HAVE;
  r.have[0] = sha;
  r.nhave = 1;
  core_fixture_heartbeat(c, v, &r);
}

cairn__vol_info core_fixture_vol(cairn__core *c, int64_t v) {
  cairn__vol_info info;
  cairn_error err = {0};
  if (cairn__core_volunteer(c, v, &info, &err) != CAIRN_OK)
    fail_msg("volunteer %lld: %s", (long long)v, err.text);
  return info;
}

cairn__task_info core_fixture_task(cairn__core *c, int64_t job, uint32_t pos) {
  cairn__task_info t;
  cairn_error err = {0};
  if (cairn__core_task_info(c, job, pos, &t, NULL, 0, &err) != CAIRN_OK)
    fail_msg("task %u of job %lld: %s", (unsigned)pos, (long long)job, err.text);
  return t;
}

mvol *core_fixture_mvol(cairn__core *c, int64_t v) {
  pthread_mutex_lock(&c->lock);
  mvol *m = cairn__vol_find_locked(c, v);
  cairn__core_unlock(c);
  if (!m)
    fail_msg("no volunteer %lld", (long long)v);
  return m;
}
