/* dispatch.c — end-to-end dispatch throughput of the master.
 *
 *   bench-dispatch --tasks N --workers K --app exec|callback [--slots S] [--prefetch P]
 *                  [--no-fsync] [--audit-chain on|off] [--audit-tree on|off]
 *                  [--sandbox on|off]
 *
 * Starts cairn-server (a separate process, fresh database in a temporary
 * folder, durable group commits unless --no-fsync), submits a bag of N
 * independent tasks, and runs K workers on loopback: with --app exec, K
 * cairn-worker processes whose app is /bin/true (fork/exec per task); with
 * --app callback, K embedded workers (threads of this process, one libcurl
 * connection each) whose app is a C callback that returns at once, which
 * shows the runtime's own overhead. --prefetch P (default 7 for callback, 0
 * for exec): each slot takes 1 + P tasks at once and sends their results
 * back together (feature "batch"; 0: one task a request, as an older
 * master would). Every result is durable before its 200. --audit-chain
 * (default on) is passed to cairn-server: the audit chain's cost; so is
 * --audit-tree (default on): the audit log's tree over the chain.
 * --sandbox (exec only; default off: the workers run /bin/true with
 * --no-sandbox, the master's dispatch measured as Work Queue's workers run
 * tasks, without namespaces): on runs each task in the worker's bubblewrap
 * sandbox (bench/results/sandbox.md: about 13 ms a task).
 * Measures wall time from submission to the job being done, and the master
 * process's CPU time (utime + stime from /proc) over the same span. Ends with
 *   dispatch: app=… tasks=N workers=K prefetch=P audit_chain=on|off tasks_per_s=X
 *             master_cpu_us_per_task=Y sandbox=on|off audit_tree=on|off
 */
#include <cairn/worker.h>

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"

extern char **environ;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) used so far by pid. */
static double proc_cpu(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char buf[2048];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  unsigned long utime = 0, stime = 0;
  /* fields after the command: state(3) ... utime(14) stime(15) */
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                   &stime) != 2)
    return -1;
  return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static int noop(const cairn_task *task, cairn_task_output *out, void *ud) {
  (void)task;
  (void)out;
  (void)ud;
  return 0;
}

typedef struct embedded {
  cairn_worker *w;
  pthread_t thread;
} embedded;

static void *run_embedded(void *arg) {
  embedded *e = arg;
  cairn_error err;
  if (cairn_worker_run(e->w, &err) != CAIRN_OK)
    fprintf(stderr, "bench-dispatch: worker: %s\n", err.text);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: bench-dispatch --tasks N --workers K --app exec|callback "
                  "[--slots S] [--prefetch P] [--no-fsync] [--audit-chain on|off] "
                  "[--audit-tree on|off] [--sandbox on|off]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long tasks = 10000;
  int workers = 8, slots = 1, durable = 1, prefetch = -1, sandbox = 0;
  const char *app = "exec", *chain = "on", *tree = "on";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
      tasks = atol(argv[++i]);
    else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
      workers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--slots") && i + 1 < argc)
      slots = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--app") && i + 1 < argc)
      app = argv[++i];
    else if (!strcmp(argv[i], "--prefetch") && i + 1 < argc)
      prefetch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-fsync"))
      durable = 0;
    else if (!strcmp(argv[i], "--audit-chain") && i + 1 < argc)
      chain = argv[++i]; /* passed to cairn-server, which checks it */
    else if (!strcmp(argv[i], "--audit-tree") && i + 1 < argc)
      tree = argv[++i]; /* the same */
    else if (!strcmp(argv[i], "--sandbox") && i + 1 < argc &&
             (!strcmp(argv[i + 1], "on") || !strcmp(argv[i + 1], "off")))
      sandbox = !strcmp(argv[++i], "on");
    else
      usage();
  }
  int exec_app = strcmp(app, "exec") == 0;
  if (tasks <= 0 || workers <= 0 || slots <= 0 || (!exec_app && strcmp(app, "callback")) ||
      prefetch > 16)
    usage();
  if (prefetch < 0)
    prefetch = exec_app ? 0 : 7;
  signal(SIGPIPE, SIG_IGN);

  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  harness_server srv;
  const char *extra[6] = {"--audit-chain", chain, "--audit-tree", tree, NULL, NULL};
  extra[4] = durable ? NULL : "--no-fsync";
  if (harness_server_start(&srv, db, extra)) {
    fprintf(stderr, "bench-dispatch: cannot start cairn-server\n");
    return 1;
  }

  /* the job: a bag of N independent no-op tasks */
  json_t *job = json_pack("{s:s, s:s, s:s, s:i}", "name", "dispatch", "app", "noop", "policy",
                          "fifo", "lease_seconds", 600);
  json_t *list = json_array();
  for (long i = 0; i < tasks; i++) {
    char id[32];
    snprintf(id, sizeof id, "t%ld", i);
    json_array_append_new(list, json_pack("{s:s}", "id", id));
  }
  json_object_set_new(job, "tasks", list);

  double cpu0 = proc_cpu(srv.pid), t0 = now();
  json_t *resp = NULL;
  long st = harness_http_json(srv.url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, job, &resp);
  json_decref(job);
  if (st != 201) {
    fprintf(stderr, "bench-dispatch: submit failed (HTTP %ld)\n", st);
    harness_server_stop(&srv, SIGKILL);
    return 1;
  }
  long long job_id = (long long)json_integer_value(json_object_get(resp, "id"));
  json_decref(resp);
  double t_submitted = now(), cpu_submitted = proc_cpu(srv.pid);

  pid_t *pids = calloc((size_t)workers, sizeof *pids);
  embedded *emb = calloc((size_t)workers, sizeof *emb);
  char slots_s[16];
  snprintf(slots_s, sizeof slots_s, "%d", slots);
  for (int i = 0; i < workers; i++) {
    char wdir[4200];
    snprintf(wdir, sizeof wdir, "%s/w%d", dir, i);
    if (exec_app) {
      char bin[4096], log[4200];
      harness_bin(bin, sizeof bin, "cairn-worker");
      snprintf(log, sizeof log, "%s/w%d.log", dir, i);
      char pf[16];
      snprintf(pf, sizeof pf, "%d", prefetch);
      const char *av[] = {bin, "--server", srv.url, "--app", "noop=/bin/true", "--dir", wdir,
                          "--slots", slots_s, "--prefetch", pf, "--exit-when-idle", "2",
                          sandbox ? NULL : "--no-sandbox", NULL};
      pids[i] = harness_spawn(av, log);
    } else {
      cairn_error err;
      cairn_worker_config cfg = {.server_url = srv.url, .dir = wdir, .slots = (unsigned)slots,
                                 .exit_when_idle = 2, .prefetch = (unsigned)prefetch};
      emb[i].w = cairn_worker_create(&cfg, &err);
      if (!emb[i].w ||
          cairn_worker_add_callback_app(emb[i].w, "noop", noop, NULL, &err) != CAIRN_OK) {
        fprintf(stderr, "bench-dispatch: %s\n", err.text);
        return 1;
      }
      pthread_create(&emb[i].thread, NULL, run_embedded, &emb[i]);
    }
  }

  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job_id);
  double t_done = 0, cpu_done = 0;
  for (;;) {
    usleep(20000);
    json_t *j = NULL;
    if (harness_http(srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &j, NULL, NULL) == 200) {
      const char *s = json_string_value(json_object_get(j, "state"));
      if (s && strcmp(s, "running") != 0) {
        t_done = now();
        cpu_done = proc_cpu(srv.pid);
        json_decref(j);
        break;
      }
    }
    json_decref(j);
  }
  for (int i = 0; i < workers; i++) {
    if (exec_app) {
      kill(pids[i], SIGTERM);
      waitpid(pids[i], NULL, 0);
    } else {
      cairn_worker_stop(emb[i].w);
      pthread_join(emb[i].thread, NULL);
      cairn_worker_delete(emb[i].w);
    }
  }
  harness_server_stop(&srv, SIGTERM);
  double elapsed = t_done - t_submitted;
  double cpu = cpu_done - cpu_submitted;
  fprintf(stderr, "submit of %ld tasks: %.3f s wall, %.3f s master CPU\n", tasks,
          t_submitted - t0, cpu_submitted - cpu0);
  printf("dispatch: app=%s tasks=%ld workers=%d prefetch=%d audit_chain=%s tasks_per_s=%.0f "
         "master_cpu_us_per_task=%.1f sandbox=%s audit_tree=%s\n", app, tasks, workers, prefetch,
         chain, (double)tasks / elapsed, cpu * 1e6 / (double)tasks, sandbox ? "on" : "off", tree);
  char rm[4200];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  if (system(rm) != 0)
    fprintf(stderr, "bench-dispatch: could not remove %s\n", dir);
  free(pids);
  free(emb);
  return 0;
}
