/* cmd_task.c — cairn status JOB TASK: one task, what it runs under, how it
 * is sized, and each of its attempts (volunteer, index, lease, exit status,
 * what it used, reason). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/termsafe.h"

static const char *text(json_t *o, const char *key, char *buf, size_t len) {
  const char *s = json_string_value(json_object_get(o, key));
  return cairn__termsafe(s ? s : "-", buf, len);
}

/* "limits: wall_seconds 1, ...; env: NAME=VALUE ...; stdin: NAME" */
static void print_run(json_t *t) {
  json_t *lim = json_object_get(t, "limits"), *env = json_object_get(t, "env"), *v;
  const char *k;
  char a[CAIRN_TERMSAFE_NAME], b[CAIRN_TERMSAFE_NAME];
  int first = 1;
  printf("limits:");
  json_object_foreach(lim, k, v) {
    printf("%s %s %lld", first ? "" : ",", cairn__termsafe(k, a, sizeof a),
           (long long)json_integer_value(v));
    first = 0;
  }
  printf("%s\n", first ? " none" : "");
  if (json_object_size(env)) {
    printf("env:");
    json_object_foreach(env, k, v)
      printf(" %s=%s", cairn__termsafe(k, a, sizeof a),
             cairn__termsafe(json_string_value(v), b, sizeof b));
    putchar('\n');
  }
  if (json_object_get(t, "stdin"))
    printf("stdin: %s\n", text(t, "stdin", a, sizeof a));
}

/* "resources: auto, category "sim", retry_larger; grown: memory 512 MiB"
 * (docs/jobs.md, "Automatic sizes"). */
static void print_sizing(json_t *t) {
  json_t *res = json_object_get(t, "resources"), *g = json_object_get(t, "grown");
  char a[CAIRN_TERMSAFE_NAME];
  const char *cat = json_string_value(json_object_get(t, "category"));
  if (!res)
    return; /* an older master */
  if (json_is_string(res))
    printf("resources: auto");
  else
    printf("resources: %lld cores, %lld MiB memory, %lld MiB disk",
           (long long)json_integer_value(json_object_get(res, "cores")),
           (long long)json_integer_value(json_object_get(res, "memory_mib")),
           (long long)json_integer_value(json_object_get(res, "disk_mib")));
  if (cat && *cat)
    printf(", category \"%s\"", cairn__termsafe(cat, a, sizeof a));
  if (json_is_true(json_object_get(t, "retry_larger")))
    printf(", retry_larger");
  if (json_integer_value(json_object_get(g, "memory_mib")))
    printf("; grown to %lld MiB memory",
           (long long)json_integer_value(json_object_get(g, "memory_mib")));
  if (json_integer_value(json_object_get(g, "disk_mib")))
    printf("; grown to %lld MiB disk", (long long)json_integer_value(json_object_get(g, "disk_mib")));
  putchar('\n');
}

/* bytes as MiB with one decimal in out, "-" when absent. */
static const char *mib(json_t *v, char *out, size_t len) {
  if (json_is_integer(v))
    snprintf(out, len, "%.1f", (double)json_integer_value(v) / 1048576.0);
  else
    snprintf(out, len, "-");
  return out;
}

/* One attempt's row (see the header in cairn__task_status). */
static void print_attempt(size_t i, json_t *t) {
  json_t *es = json_object_get(t, "exit_status"), *u = json_object_get(t, "usage");
  json_t *cpu = json_object_get(t, "cpu_seconds"), *credit = json_object_get(t, "credit");
  json_t *wall = json_object_get(u, "wall_seconds");
  json_t *sized = json_object_get(json_object_get(t, "sized"), "memory_mib");
  json_t *retry = json_object_get(t, "retry");
  char lease[64], reason[64], exit[16] = "-", cpus[32] = "-", credits[32] = "-", walls[32] = "-";
  char mem[32], disk[32], limit[32] = "-";
  if (json_is_integer(es))
    snprintf(exit, sizeof exit, "%lld", (long long)json_integer_value(es));
  if (json_is_number(cpu)) /* the result's claim and granted credit (docs/accountability.md) */
    snprintf(cpus, sizeof cpus, "%.3f", json_number_value(cpu));
  if (json_is_number(credit))
    snprintf(credits, sizeof credits, "%.3f", json_number_value(credit));
  if (json_is_number(wall))
    snprintf(walls, sizeof walls, "%.3f", json_number_value(wall));
  if (json_is_integer(sized))
    snprintf(limit, sizeof limit, "%lld", (long long)json_integer_value(sized));
  printf("%7zu %9lld %12lld %5lld %-9s %4s %8s %8s %8s %8s %9s %8s %s", i + 1,
         (long long)json_integer_value(json_object_get(t, "volunteer")),
         (long long)json_integer_value(json_object_get(t, "index")),
         (long long)json_integer_value(json_object_get(t, "round")),
         text(t, "lease", lease, sizeof lease), exit, cpus, walls,
         mib(json_object_get(u, "memory_bytes"), mem, sizeof mem),
         mib(json_object_get(u, "disk_bytes"), disk, sizeof disk), limit, credits,
         text(t, "reason", reason, sizeof reason));
  const char *k;
  json_t *v;
  json_object_foreach(retry, k, v) /* the failure made its task ask for more: not counted */
    printf(", retried with %lld MiB %s (not counted)", (long long)json_integer_value(v),
           strcmp(k, "disk_mib") == 0 ? "disk" : "memory");
  putchar('\n');
}

int cairn__task_status(cairn__http *h, long long job, const char *task) {
  char path[96], a[CAIRN_TERMSAFE_NAME], b[64];
  json_t *list = NULL, *t, *found = NULL;
  size_t i;
  if (!(list = cairn__client_job_tasks(h, job)))
    return 1;
  json_array_foreach(json_object_get(list, "tasks"), i, t) {
    const char *id = json_string_value(json_object_get(t, "id"));
    if (id && strcmp(id, task) == 0)
      found = t;
  }
  if (!found) {
    json_decref(list);
    return cairn__cli_fail("job %lld has no task \"%s\"", job,
                          cairn__termsafe(task, a, sizeof a));
  }
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", job,
           (long long)json_integer_value(json_object_get(found, "key")));
  json_decref(list);
  json_t *d = NULL;
  if (cairn__client_json(h, "GET", path, NULL, &d, 0) != 200) {
    json_decref(d);
    return 1;
  }
  printf("task %s of job %lld: %s, %lld of %lld attempts in this round\n",
         text(d, "id", a, sizeof a), job, text(d, "state", b, sizeof b),
         (long long)json_integer_value(json_object_get(d, "attempts")),
         (long long)json_integer_value(json_object_get(d, "max_attempts")));
  json_t *progress = json_object_get(d, "progress"); /* a lease out whose worker said it */
  if (json_is_number(progress))
    printf("progress: %.1f%% done, as its worker last reported\n",
           100.0 * json_number_value(progress));
  print_run(d);
  print_sizing(d);
  printf("ATTEMPT VOLUNTEER        INDEX ROUND LEASE     EXIT    CPU_S   WALL_S  MEM_MIB DISK_MIB "
         "LIMIT_MIB   CREDIT REASON\n");
  json_array_foreach(json_object_get(d, "history"), i, t) print_attempt(i, t);
  json_decref(d);
  return 0;
}
