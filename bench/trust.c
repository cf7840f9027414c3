/* trust.c — what adaptive replication saves and what it lets through
 * (docs/accountability.md, "Adaptive replication").
 *
 *   bench-trust [--tasks N] [--volunteers V] [--runs R] [--threshold T]
 *               [--spot-check P] [--lie F]
 *
 * Drives an in-process core (server/core/core.h, a real SQLite file, durable
 * off): V volunteers ask for work in turn and answer at once; one of them
 * answers right for its first 3T tasks, then wrong with probability F. A
 * job of N independent tasks (replication 2, quorum 2) runs with and
 * without "adaptive", R times each with other seeds. Prints, per mode, the
 * copies issued per task; and for adaptive runs the liar's lies until its
 * first trust reset (mean, max; about 1/(P·F) expected, fewer as it is
 * also the second copy of others' spot checks) and the tasks whose
 * accepted result is a lie when the job ends (lies accepted alone after
 * the last spot check that caught it: a liar with F < 1 may earn trust
 * again). Ends with
 *   trust: … copies_per_task adaptive=X replicated=Y lies_to_catch mean=M max=K wrong_at_end=W
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

typedef struct opts {
  int tasks, vols, runs, threshold;
  double spot, lie;
} opts;

typedef struct outcome {
  double copies_per_task;
  long lies_to_catch; /* -1: never caught */
  long wrong_at_end;
} outcome;

static int64_t reg(cairn__core *c, int i) {
  char *apps[] = {"sq"}, token[65], name[32];
  int64_t id = 0;
  cairn_error err = {0};
  snprintf(name, sizeof name, "v%d", i);
  if (cairn__core_register(c, name, "rack", apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-trust: register: %s\n", err.text);
    exit(1);
  }
  return id;
}

/* Trust resets since start (cairn__trust_counts). */
static uint64_t resets(cairn__core *c) {
  uint64_t n[4];
  pthread_mutex_lock(&c->lock);
  cairn__trust_counts(c, n);
  cairn__core_unlock(c);
  return n[2];
}

static int64_t submit(cairn__core *c, int n, int adaptive) {
  json_t *tasks = json_array();
  for (int k = 0; k < n; k++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", k);
    json_array_append_new(tasks, json_pack("{s:s}", "id", id));
  }
  json_t *job = json_pack("{s:s, s:i, s:i, s:b, s:s, s:i, s:o}", "app", "sq", "replication", 2,
                          "quorum", 2, "adaptive", adaptive, "policy", "fifo", "max_attempts", 20,
                          "tasks", tasks);
  char *text = json_dumps(job, JSON_COMPACT);
  json_decref(job);
  int64_t id = core_fixture_submit(c, text);
  free(text);
  return id;
}

/* Set of the liar's lying indices (sorted at the end). */
typedef struct idxset {
  int64_t *v;
  size_t n, cap;
} idxset;

static void idx_add(idxset *s, int64_t x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v)
      exit(1);
  }
  s->v[s->n++] = x;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static outcome run(const opts *o, int adaptive, unsigned seed) {
  void *state = NULL;
  if (core_fixture_setup(&state)) {
    fprintf(stderr, "bench-trust: no temporary folder\n");
    exit(1);
  }
  core_fixture *f = state;
  cairn__core *c = f->c;
  cairn__trust_set_threshold(c, o->threshold);
  cairn__trust_set_spot_check(c, o->spot);
  cairn__trust_seed(c, 0x9e3779b97f4a7c15ull * (seed + 1));
  srand(seed);
  int64_t *ids = malloc((size_t)o->vols * sizeof *ids);
  for (int i = 0; i < o->vols; i++)
    ids[i] = reg(c, i);
  int64_t liar = ids[0], job = submit(c, o->tasks, adaptive);
  idxset lies = {0};
  long liar_tasks = 0, lies_to_catch = -1;
  uint64_t allocs0 = c->allocations_total;
  for (int idle = 0; cairn__core_job_state(c, job) == JS_RUNNING && idle < 4 * o->vols;) {
    for (int i = 0; i < o->vols; i++) {
      json_t *w = NULL;
      int retry = 0;
      cairn_error err = {0};
      if (cairn__core_work(c, ids[i], NULL, NULL, 0, &w, &retry, &err) != CAIRN_OK || !w) {
        idle++;
        continue;
      }
      idle = 0;
      int64_t idx = (int64_t)json_integer_value(json_object_get(w, "index"));
      json_decref(w);
      const char *out = "right\n";
      if (ids[i] == liar && ++liar_tasks > 3 * o->threshold &&
          (double)rand() / ((double)RAND_MAX + 1) < o->lie) {
        out = "wrong\n";
        idx_add(&lies, idx);
      }
      if (cairn__core_result(c, ids[i], idx, 0, NULL, out, strlen(out), NULL, NULL, &err) !=
          CAIRN_OK) {
        fprintf(stderr, "bench-trust: result: %s\n", err.text);
        exit(1);
      }
      if (lies_to_catch < 0 && resets(c) > 0) /* only the liar is ever invalid */
        lies_to_catch = (long)lies.n;
    }
  }
  if (cairn__core_job_state(c, job) != JS_DONE) {
    fprintf(stderr, "bench-trust: the job did not finish\n");
    exit(1);
  }
  outcome r = {.copies_per_task = (double)(c->allocations_total - allocs0) / o->tasks,
               .lies_to_catch = lies_to_catch};
  qsort(lies.v, lies.n, sizeof *lies.v, cmp64);
  json_t *jj = cairn__core_job_json(c, job, 0);
  uint32_t ntasks = (uint32_t)json_integer_value(json_object_get(jj, "tasks"));
  json_decref(jj);
  for (uint32_t k = 0; k < ntasks; k++) {
    int64_t acc = core_fixture_task(c, job, k).accepted;
    r.wrong_at_end += lies.n && bsearch(&acc, lies.v, lies.n, sizeof acc, cmp64) != NULL;
  }
  free(lies.v);
  free(ids);
  core_fixture_teardown(&state);
  return r;
}

static int arg(int argc, char **argv, int *i, const char *name, double *out) {
  if (strcmp(argv[*i], name) != 0)
    return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "bench-trust: %s wants a number\n", name);
    exit(2);
  }
  *out = atof(argv[++*i]);
  return 1;
}

int main(int argc, char **argv) {
  opts o = {.tasks = 2000, .vols = 8, .runs = 10, .threshold = 10, .spot = 0.1, .lie = 1.0};
  for (int i = 1; i < argc; i++) {
    double x = 0;
    if (arg(argc, argv, &i, "--tasks", &x))
      o.tasks = (int)x;
    else if (arg(argc, argv, &i, "--volunteers", &x))
      o.vols = (int)x;
    else if (arg(argc, argv, &i, "--runs", &x))
      o.runs = (int)x;
    else if (arg(argc, argv, &i, "--threshold", &x))
      o.threshold = (int)x;
    else if (arg(argc, argv, &i, "--spot-check", &x))
      o.spot = x;
    else if (arg(argc, argv, &i, "--lie", &x))
      o.lie = x;
    else {
      fprintf(stderr, "usage: bench-trust [--tasks N] [--volunteers V] [--runs R] "
              "[--threshold T] [--spot-check P] [--lie F]\n");
      return 2;
    }
  }
  if (o.tasks < 1 || o.vols < 3 || o.runs < 1 || o.threshold < 1 || !(o.spot >= 0) ||
      o.spot > 1 || !(o.lie >= 0) || o.lie > 1) {
    fprintf(stderr, "bench-trust: tasks >= 1, volunteers >= 3, runs >= 1, threshold >= 1, "
            "spot check and lie in [0, 1]\n");
    return 2;
  }
  double cp_a = 0, cp_r = 0, sum_catch = 0;
  long max_catch = 0, caught = 0, wrong = 0;
  for (int s = 0; s < o.runs; s++) {
    outcome a = run(&o, 1, (unsigned)s), r = run(&o, 0, (unsigned)s);
    cp_a += a.copies_per_task / o.runs;
    cp_r += r.copies_per_task / o.runs;
    wrong += a.wrong_at_end + r.wrong_at_end;
    if (a.lies_to_catch >= 0) {
      caught++;
      sum_catch += (double)a.lies_to_catch;
      max_catch = a.lies_to_catch > max_catch ? a.lies_to_catch : max_catch;
    }
  }
  printf("trust: tasks=%d volunteers=%d runs=%d threshold=%d spot_check=%.2f lie=%.2f "
         "copies_per_task adaptive=%.3f replicated=%.3f lies_to_catch mean=%.1f max=%ld "
         "(caught in %ld of %d runs; 1/(p*f)=%.1f) wrong_at_end=%ld\n",
         o.tasks, o.vols, o.runs, o.threshold, o.spot, o.lie, cp_a, cp_r,
         caught ? sum_catch / (double)caught : 0.0, max_catch, caught, o.runs,
         o.spot * o.lie > 0 ? 1 / (o.spot * o.lie) : 0.0, wrong);
  return 0;
}
