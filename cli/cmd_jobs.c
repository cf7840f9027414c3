/* cmd_jobs.c — cairn submit | status | wait | results | volunteers. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/limits.h"
#include "common/sha256.h"
#include "common/termsafe.h"
#include "plan/jobspec.h"

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  cairn__buf b;
  cairn__buf_init(&b, CAIRN_MAX_BODY);
  char chunk[65536];
  size_t n;
  int bad = 0;
  while (!bad && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
    bad = cairn__buf_append(&b, chunk, n);
  bad |= ferror(f);
  fclose(f);
  if (bad) {
    cairn__buf_free(&b);
    return NULL;
  }
  return cairn__buf_take(&b, len);
}

int cairn__cmd_submit(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn submit JOB.json [--server URL] [--token T | --token-file F]\n"
         "Uploads every file the job lists by \"path\" (relative paths are taken from the\n"
         "job file's folder; files are named by their sha256), submits the job and prints\n"
         "its id.");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  if (argc != 2)
    return cairn__cli_fail("usage: cairn submit JOB.json");
  size_t len = 0;
  char *text = read_all(argv[1], &len);
  if (!text)
    return cairn__cli_fail("cannot read %s", argv[1]);
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(text, len, CAIRN_JOBSPEC_CLIENT, &err);
  if (!spec) {
    free(text);
    return cairn__cli_fail("%s: %s", argv[1], err.text);
  }
  cairn__jobspec_free(spec);
  json_t *job = json_loadb(text, len, 0, NULL);
  free(text);
  char *dircopy = strdup(argv[1]);
  const char *dir = dirname(dircopy);
  cairn__http *h = cairn__client_connect(&o);
  int rc = 1;
  if (!h)
    goto out;
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(job, "files"), i, f) {
    json_t *p = json_object_get(f, "path");
    if (!p)
      continue;
    char path[4096], hex[65];
    const char *ps = json_string_value(p);
    snprintf(path, sizeof path, "%s%s%s", ps[0] == '/' ? "" : dir, ps[0] == '/' ? "" : "/", ps);
    long long size;
    if (cairn__client_upload(h, path, json_string_value(json_object_get(f, "name")), hex, &size))
      goto out;
    json_object_del(f, "path");
    json_object_set_new(f, "sha256", json_string(hex));
    json_object_set_new(f, "size", json_integer(size));
  }
  char *out = json_dumps(job, JSON_COMPACT);
  json_t *resp = NULL;
  long st = out ? cairn__client_json(h, "POST", "/v1/jobs", out, &resp, 0) : -1;
  free(out);
  if (st == 201) {
    printf("%lld\n", (long long)json_integer_value(json_object_get(resp, "id")));
    rc = 0;
  }
  json_decref(resp);
out:
  json_decref(job);
  free(dircopy);
  cairn__http_delete(h);
  return rc;
}

static void print_counts(json_t *j) {
  json_t *c = json_object_get(j, "counts");
  char name[CAIRN_TERMSAFE_NAME], state[64];
  printf("%-5lld %-20s %-8s %7lld %7lld %7lld %7lld %7lld %7lld\n",
         (long long)json_integer_value(json_object_get(j, "id")),
         cairn__termsafe(json_string_value(json_object_get(j, "name")), name, sizeof name),
         cairn__termsafe(json_string_value(json_object_get(j, "state")), state, sizeof state),
         (long long)json_integer_value(json_object_get(j, "tasks")),
         (long long)json_integer_value(json_object_get(c, "waiting")),
         (long long)json_integer_value(json_object_get(c, "eligible")),
         (long long)json_integer_value(json_object_get(c, "running")),
         (long long)json_integer_value(json_object_get(c, "done")),
         (long long)json_integer_value(json_object_get(c, "failed")));
}

/* The first 12 characters of s (NULL: "") in out. */
static const char *sha12(const char *s, char out[13]) {
  snprintf(out, 13, "%.12s", s ? s : "");
  return out;
}

/* Tasks of one job that fit no worker: how many, and the largest offer. */
static void print_unfit(json_t *j) {
  long long n = (long long)json_integer_value(json_object_get(j, "unfit"));
  json_t *lo = json_object_get(j, "largest_offer");
  if (n <= 0)
    return;
  printf("unfit: %lld task%s request%s more than any worker offers (largest offer: %lld cores, "
         "%lld MiB memory, %lld MiB disk)\n", n, n == 1 ? "" : "s", n == 1 ? "s" : "",
         (long long)json_integer_value(json_object_get(lo, "cores")),
         (long long)json_integer_value(json_object_get(lo, "memory_mib")),
         (long long)json_integer_value(json_object_get(lo, "disk_mib")));
}

/* A job's categories (docs/jobs.md, "Automatic sizes"), when one of them
 * sizes its tasks itself or was measured: tasks, the largest peaks of
 * their successful runs, and what an automatic task of it asks now. */
static void print_categories(json_t *j) {
  json_t *cats = json_object_get(j, "categories"), *k;
  size_t i;
  int any = 0;
  json_array_foreach(cats, i, k) any |= json_is_true(json_object_get(k, "measured")) ||
                                        json_integer_value(json_object_get(k, "auto")) > 0;
  if (!any)
    return;
  printf("CATEGORY         TASKS  AUTO PEAK_MIB DISK_MIB CPU/WALL SIZE\n");
  json_array_foreach(cats, i, k) {
    char label[CAIRN_TERMSAFE_NAME], peak[24] = "-", disk[24] = "-", ratio[24] = "-", size[96];
    const char *l = json_string_value(json_object_get(k, "category"));
    json_t *z = json_object_get(k, "size");
    if (json_is_true(json_object_get(k, "measured"))) {
      snprintf(peak, sizeof peak, "%lld", (long long)json_integer_value(json_object_get(k, "memory_mib")));
      snprintf(disk, sizeof disk, "%lld", (long long)json_integer_value(json_object_get(k, "disk_mib")));
      snprintf(ratio, sizeof ratio, "%.2f", json_number_value(json_object_get(k, "cpu_ratio")));
    }
    if (json_is_object(z))
      snprintf(size, sizeof size, "%lld cores, %lld MiB memory, %lld MiB disk",
               (long long)json_integer_value(json_object_get(z, "cores")),
               (long long)json_integer_value(json_object_get(z, "memory_mib")),
               (long long)json_integer_value(json_object_get(z, "disk_mib")));
    else
      snprintf(size, sizeof size, "%s", json_is_string(z) ? "a worker's whole offer" : "-");
    printf("%-16s %5lld %5lld %8s %8s %8s %s\n",
           l && *l ? cairn__termsafe(l, label, sizeof label) : "(job)",
           (long long)json_integer_value(json_object_get(k, "tasks")),
           (long long)json_integer_value(json_object_get(k, "auto")), peak, disk, ratio, size);
  }
}

/* One job's input distribution: bytes by source, and per broadcast file
 * how many of its workers hold it and the plan in force. */
static void print_distribution(json_t *j) {
  json_t *bs = json_object_get(j, "bytes_served");
  json_t *files = json_object_get(j, "broadcast_files");
  if (!bs || (!json_integer_value(json_object_get(bs, "master")) &&
              !json_integer_value(json_object_get(bs, "peer")) && !json_array_size(files)))
    return;
  printf("input bytes served: master %lld, peers %lld\n",
         (long long)json_integer_value(json_object_get(bs, "master")),
         (long long)json_integer_value(json_object_get(bs, "peer")));
  size_t i;
  json_t *f;
  json_array_foreach(files, i, f) {
    json_t *secs = json_object_get(f, "seconds_to_all"), *plan = json_object_get(f, "plan");
    char name[CAIRN_TERMSAFE_NAME], short_sha[13], sha[64], algo[64];
    printf("broadcast %s (%s): %lld of %lld workers hold it",
           cairn__termsafe(json_string_value(json_object_get(f, "name")), name, sizeof name),
           cairn__termsafe(sha12(json_string_value(json_object_get(f, "sha256")), short_sha), sha,
                          sizeof sha),
           (long long)json_integer_value(json_object_get(f, "holding")),
           (long long)json_integer_value(json_object_get(f, "workers")));
    if (json_is_integer(secs))
      printf(", all within %lld s", (long long)json_integer_value(secs));
    if (json_is_object(plan))
      printf("; plan %s over %lld clusters, predicted %.2f s (lower bound %.2f s)",
             cairn__termsafe(json_string_value(json_object_get(plan, "algorithm")), algo,
                            sizeof algo),
             (long long)json_integer_value(json_object_get(plan, "clusters")),
             json_number_value(json_object_get(plan, "predicted_s")),
             json_number_value(json_object_get(plan, "lower_bound_s")));
    putchar('\n');
  }
}

static const char *counts_header =
  "ID    NAME                 STATE      TASKS WAITING ELIGIBL RUNNING    DONE  FAILED\n";

static int parse_job_id(const char *s, long long *id) {
  char *end = NULL;
  *id = strtoll(s, &end, 10);
  return (*s && !*end && *id > 0) ? 0 : -1;
}

int cairn__cmd_status(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn status [JOB [TASK]]\nLists the jobs with their task counts by state, one job\n"
         "with the tasks that fit no worker (unfit), its categories' measured peaks and\n"
         "automatic sizes, and its input distribution (bytes served, broadcast files,\n"
         "plan), or one task (its id in the job file) with its limits and sizing and each\n"
         "attempt: volunteer, index, lease, exit status, CPU and wall time, peak memory\n"
         "and disk, the memory limit it was sized to, and reason (wall, cpu, memory, disk,\n"
         "output, signal N, exit N; a retry at a larger size is said after it).");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  long long id = 0;
  if (argc > 3 || (argc >= 2 && parse_job_id(argv[1], &id)))
    return cairn__cli_fail("usage: cairn status [JOB [TASK]]  (JOB is a job id)");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  if (argc == 3) {
    int trc = cairn__task_status(h, id, argv[2]);
    cairn__http_delete(h);
    return trc;
  }
  char path[64];
  if (id)
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  else
    snprintf(path, sizeof path, "/v1/jobs");
  json_t *resp = NULL;
  long st = cairn__client_json(h, "GET", path, NULL, &resp, 0);
  int rc = 1;
  if (st == 200) {
    fputs(counts_header, stdout);
    if (id) {
      print_counts(resp);
      print_unfit(resp);
      print_categories(resp);
      print_distribution(resp);
    } else {
      size_t i;
      json_t *j;
      json_array_foreach(json_object_get(resp, "jobs"), i, j) print_counts(j);
    }
    rc = 0;
  }
  json_decref(resp);
  cairn__http_delete(h);
  return rc;
}

/* The longest wait `cairn wait` asks the master to hold one request for,
 * and its pause after an answer that came early with the job running (a
 * master past its cap of job waits, or one older than "wait"): from
 * WAIT_PAUSE_US, doubling, at most a second. */
#define WAIT_HOLD_MS 30000
#define WAIT_PAUSE_US 50000

static double seconds_since(const struct timespec *t0) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int cairn__cmd_wait(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn wait JOB [--timeout SECONDS]\n"
         "Exits 0 when the job is done, 1 if it failed, 2 on timeout.");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  double timeout = -1;
  long long id = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
      char *end = NULL;
      timeout = strtod(argv[++i], &end);
      if (*end || timeout < 0)
        return cairn__cli_fail("--timeout needs a number of seconds");
    } else if (!id && parse_job_id(argv[i], &id) == 0) {
      continue;
    } else
      return cairn__cli_fail("usage: cairn wait JOB [--timeout SECONDS]");
  }
  if (!id)
    return cairn__cli_fail("usage: cairn wait JOB [--timeout SECONDS]");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[96];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  useconds_t delay = WAIT_PAUSE_US;
  int rc = 2;
  /* the master holds each request until the job finishes or the wait
   * passes (GET /v1/jobs/{id}?wait=, docs/protocol.md) */
  cairn__http_set_timeout(h, WAIT_HOLD_MS / 1000 + 30);
  for (;;) {
    long ms = WAIT_HOLD_MS;
    if (timeout >= 0 && (timeout - seconds_since(&t0)) * 1000 < ms)
      ms = timeout > seconds_since(&t0) ? (long)((timeout - seconds_since(&t0)) * 1000) : 0;
    snprintf(path, sizeof path, "/v1/jobs/%lld?wait=%ld", id, ms);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    json_t *resp = NULL;
    long st = cairn__client_json(h, "GET", path, NULL, &resp, 0);
    if (st != 200) {
      json_decref(resp);
      rc = 3;
      break;
    }
    const char *state = json_string_value(json_object_get(resp, "state"));
    int done = state && strcmp(state, "done") == 0, failed = state && strcmp(state, "failed") == 0;
    int cancelled = state && strcmp(state, "cancelled") == 0;
    json_decref(resp);
    if (done || failed || cancelled) {
      rc = done ? 0 : 1;
      if (!done)
        fprintf(stderr, "cairn: job %lld %s\n", id, failed ? "failed" : "was cancelled");
      break;
    }
    if (timeout >= 0 && seconds_since(&t0) >= timeout) {
      fprintf(stderr, "cairn: job %lld still running after %.0f s\n", id, timeout);
      break;
    }
    if (seconds_since(&t1) * 1000 >= ms * 0.9) {
      delay = WAIT_PAUSE_US; /* held for its wait: ask again at once */
      continue;
    }
    usleep(delay); /* answered early: not held */
    if (delay < 1000000)
      delay *= 2;
  }
  cairn__http_delete(h);
  return rc;
}

/* Prints s on one line: newlines and tabs escaped as \n and \t, every
 * other control byte as \xNN (common/termsafe.h), trailing newline dropped. */
static void one_line(const char *s) {
  size_t n = strlen(s), from = 0;
  while (n && s[n - 1] == '\n')
    n--;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '\n' && s[i] != '\t')
      continue;
    cairn__termsafe_write(stdout, s + from, i - from);
    if (i < n)
      fputs(s[i] == '\n' ? "\\n" : "\\t", stdout);
    from = i + 1;
  }
}

int cairn__cmd_results(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn results JOB [--json] [--dir OUT]\n"
         "One line per task: id, state, volunteer, index, result (newlines shown as \\n).\n"
         "--dir OUT also downloads every output file into OUT/TASK/NAME (sha256 verified).");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  int as_json = 0;
  long long id = 0;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      as_json = 1;
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc && !dir)
      dir = argv[++i];
    else if (!id && parse_job_id(argv[i], &id) == 0)
      continue;
    else
      return cairn__cli_fail("usage: cairn results JOB [--json] [--dir OUT]");
  }
  if (!id)
    return cairn__cli_fail("usage: cairn results JOB [--json] [--dir OUT]");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  json_t *resp = cairn__client_job_tasks(h, id);
  int rc = 1;
  if (resp) {
    rc = 0;
    if (as_json) {
      char *s = json_dumps(resp, JSON_INDENT(2));
      puts(s ? s : "{}");
      free(s);
    } else {
      size_t i;
      json_t *t;
      json_array_foreach(json_object_get(resp, "tasks"), i, t) {
        json_t *v = json_object_get(t, "volunteer"), *x = json_object_get(t, "index");
        json_t *out = json_object_get(t, "output");
        char tid[CAIRN_TERMSAFE_NAME], state[64];
        printf("%s\t%s\t", cairn__termsafe(json_string_value(json_object_get(t, "id")), tid,
                                          sizeof tid),
               cairn__termsafe(json_string_value(json_object_get(t, "state")), state,
                              sizeof state));
        if (json_is_integer(v))
          printf("%lld\t%lld\t", (long long)json_integer_value(v),
                 (long long)json_integer_value(x));
        else
          printf("-\t-\t");
        if (json_is_string(json_object_get(t, "encoding")))
          printf("base64:");
        one_line(json_is_string(out) ? json_string_value(out) : "");
        putchar('\n');
      }
    }
    if (dir)
      rc = cairn__cli_fetch_outputs(h, id, json_object_get(resp, "tasks"), dir);
  }
  json_decref(resp);
  cairn__http_delete(h);
  return rc;
}

int cairn__cmd_volunteers(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn volunteers\n"
         "id, name, cluster, row, allocations, valid/invalid results, banned, quarantined,\n"
         "trust (valid replicated results in a row) and whether that makes it trusted\n"
         "(its tasks of adaptive jobs run once, but for spot checks).");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  if (argc != 1)
    return cairn__cli_fail("usage: cairn volunteers");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  json_t *resp = NULL;
  long st = cairn__client_json(h, "GET", "/v1/volunteers", NULL, &resp, 0);
  int rc = 1;
  if (st == 200) {
    rc = 0;
    printf("%-5s %-16s %-12s %6s %11s %7s %7s %6s %11s %6s %7s\n", "ID", "NAME", "CLUSTER",
           "ROW", "ALLOCATIONS", "VALID", "INVALID", "BANNED", "QUARANTINED", "TRUST", "TRUSTED");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(resp, "volunteers"), i, v) {
      char name[CAIRN_TERMSAFE_NAME], cluster[CAIRN_TERMSAFE_NAME];
      printf("%-5lld %-16s %-12s %6lld %11lld %7lld %7lld %6s %11s %6lld %7s\n",
             (long long)json_integer_value(json_object_get(v, "id")),
             cairn__termsafe(json_string_value(json_object_get(v, "name")), name, sizeof name),
             cairn__termsafe(json_string_value(json_object_get(v, "cluster")), cluster,
                            sizeof cluster),
             (long long)json_integer_value(json_object_get(v, "row")),
             (long long)json_integer_value(json_object_get(v, "allocations")),
             (long long)json_integer_value(json_object_get(v, "valid")),
             (long long)json_integer_value(json_object_get(v, "invalid")),
             json_is_true(json_object_get(v, "banned")) ? "yes" : "no",
             json_is_true(json_object_get(v, "quarantined")) ? "yes" : "no",
             (long long)json_integer_value(json_object_get(v, "trust")),
             json_is_true(json_object_get(v, "trusted")) ? "yes" : "no");
    }
  }
  json_decref(resp);
  cairn__http_delete(h);
  return rc;
}
