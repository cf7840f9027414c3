/* embed_master.c — a program that embeds a Cairn master.
 *
 * It opens (or creates) a database, serves the HTTP API on a loopback port,
 * submits a job of its own — the sum of 1..N by a binary reduction tree, each
 * inner task adding its parents' outputs — and waits for it. Workers are
 * whoever connects: by default the program also runs one embedded worker
 * thread whose app "sum" is a C callback, so it is complete on its own;
 * with --external it only prints the URL and waits for cairn-workers, e.g.
 *   cairn-worker --server URL --app sum=PATH-TO-A-PROGRAM
 *
 * Usage: example-embed_master [--db PATH] [--leaves N] [--external]
 * Without --db it works in a fresh folder under /tmp and removes it at the end.
 * Prints the master's URL, then "sum 1..N = S" and exits 0 when S is right.
 */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */

#include <cairn/master.h>
#include <cairn/worker.h>

#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The app: its result is the sum of its integer args and its parents' outputs. */
static int sum_app(const cairn_task *task, cairn_task_output *out, void *ud) {
  (void)ud;
  long long s = 0;
  for (size_t i = 0; i < task->nargs; i++)
    s += atoll(task->args[i]);
  for (size_t i = 0; i < task->nparents; i++) {
    FILE *f = fopen(task->parents[i].path, "r");
    long long v = 0;
    if (!f || fscanf(f, "%lld", &v) != 1) {
      if (f)
        fclose(f);
      return 1;
    }
    fclose(f);
    s += v;
  }
  return cairn_task_output_printf(out, "%lld\n", s) < 0 ? 1 : 0;
}

/* A job summing 1..leaves (leaves a power of two) with a reduction tree. */
static char *tree_job(int leaves) {
  json_t *tasks = json_array();
  char id[32], a[32], b[32];
  for (int i = 0; i < leaves; i++) {
    snprintf(id, sizeof id, "0,%d", i);
    snprintf(a, sizeof a, "%d", i + 1);
    json_array_append_new(tasks, json_pack("{s:s, s:[s]}", "id", id, "args", a));
  }
  for (int level = 1, width = leaves / 2; width >= 1; level++, width /= 2)
    for (int i = 0; i < width; i++) {
      snprintf(id, sizeof id, "%d,%d", level, i);
      snprintf(a, sizeof a, "%d,%d", level - 1, 2 * i);
      snprintf(b, sizeof b, "%d,%d", level - 1, 2 * i + 1);
      json_array_append_new(tasks, json_pack("{s:s, s:[s,s]}", "id", id, "after", a, b));
    }
  json_t *job = json_pack("{s:s, s:s, s:o}", "name", "sum-tree", "app", "sum", "tasks", tasks);
  char *text = json_dumps(job, JSON_COMPACT);
  json_decref(job);
  return text;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  return remove(path);
}

static void *run_worker(void *arg) {
  cairn_error err;
  if (cairn_worker_run(arg, &err) != CAIRN_OK)
    fprintf(stderr, "example-embed_master: worker: %s\n", err.text);
  return NULL;
}

int main(int argc, char **argv) {
  const char *db = NULL;
  int leaves = 64, external = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--leaves") && i + 1 < argc)
      leaves = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--external"))
      external = 1;
    else {
      fprintf(stderr, "usage: example-embed_master [--db PATH] [--leaves N] [--external]\n");
      return 2;
    }
  }
  if (leaves < 1 || (leaves & (leaves - 1))) {
    fprintf(stderr, "example-embed_master: --leaves must be a power of two\n");
    return 2;
  }
  char tmp[] = "/tmp/cairn-embed-XXXXXX", path[64], wdir[64];
  if (!db) {
    if (!mkdtemp(tmp)) {
      perror("mkdtemp");
      return 1;
    }
    snprintf(path, sizeof path, "%s/master.db", tmp);
    db = path;
  }
  snprintf(wdir, sizeof wdir, "%s/worker", tmp);

  cairn_error err;
  cairn_master_config cfg;
  cairn_master_config_init(&cfg);
  cfg.db_path = db;
  cfg.listen = "127.0.0.1:0";
  cfg.admin_token = "embedded-example-admin-token";
  cairn_master *m = cairn_master_create(&cfg, &err);
  if (!m || cairn_master_start(m, &err) != CAIRN_OK) {
    fprintf(stderr, "example-embed_master: %s\n", err.text);
    cairn_master_delete(m);
    return 1;
  }
  printf("master listening on %s\n", cairn_master_url(m));
  fflush(stdout);

  char *job = tree_job(leaves);
  long long id = 0;
  if (cairn_master_submit(m, job, strlen(job), &id, &err) != CAIRN_OK) {
    fprintf(stderr, "example-embed_master: %s\n", err.text);
    free(job);
    cairn_master_delete(m);
    return 1;
  }
  free(job);

  cairn_worker *w = NULL;
  pthread_t thread;
  if (!external) {
    cairn_worker_config wc;
    cairn_worker_config_init(&wc);
    wc.server_url = cairn_master_url(m);
    wc.dir = wdir;
    wc.slots = 2;
    w = cairn_worker_create(&wc, &err);
    if (!w || cairn_worker_add_callback_app(w, "sum", sum_app, NULL, &err) != CAIRN_OK ||
        pthread_create(&thread, NULL, run_worker, w)) {
      fprintf(stderr, "example-embed_master: %s\n", err.text);
      cairn_worker_delete(w);
      cairn_master_delete(m);
      return 1;
    }
  }
  cairn_job_state state = CAIRN_JOB_RUNNING;
  cairn_status waited = cairn_master_wait(m, id, 120, &state, &err);
  if (w) {
    cairn_worker_stop(w);
    pthread_join(thread, NULL);
    cairn_worker_delete(w);
  }
  long long want = (long long)leaves * (leaves + 1) / 2, got = -1;
  char *results = NULL;
  cairn_error rerr;
  if (waited == CAIRN_OK && cairn_master_results_json(m, id, &results, &rerr) != CAIRN_OK)
    fprintf(stderr, "example-embed_master: results: %s\n", rerr.text);
  json_t *r = results ? json_loads(results, 0, NULL) : NULL;
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(r, "tasks"), i, t)
    if (json_array_size(json_object_get(r, "tasks")) == i + 1)
      got = json_is_string(json_object_get(t, "output"))
              ? atoll(json_string_value(json_object_get(t, "output")))
              : -1;
  json_decref(r);
  free(results);
  cairn_master_delete(m);
  if (db == path)
    nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (waited != CAIRN_OK || state != CAIRN_JOB_DONE) {
    fprintf(stderr, "example-embed_master: the job did not finish: %s\n",
            waited != CAIRN_OK ? err.text : "a task failed");
    return 1;
  }
  printf("sum 1..%d = %lld (expected %lld)\n", leaves, got, want);
  return got == want ? 0 : 1;
}
