/* embed_worker.c — a program that embeds the Cairn worker library and
 * computes with a C callback instead of a separate program.
 *
 * It offers the app "sum": a task's result is the sum of its integer
 * arguments plus every integer found in its parents' outputs, printed as one
 * line. A reduction tree of "sum" tasks therefore adds up its leaves.
 *
 * Usage:
 *   example-embed_worker --server URL [--dir DIR] [--slots N]
 *                        [--exit-when-idle SECONDS] [--max-tasks N]
 *
 * Try it (with CAIRN_ADMIN_TOKEN set for the master and the cairn CLI):
 *   cairn-server --listen 127.0.0.1:8080 &
 *   cat > sum.json <<'EOF'
 *   {"name": "sum", "app": "sum", "policy": "fifo", "tasks": [
 *     {"id": "a", "args": ["1", "2"]}, {"id": "b", "args": ["3"]},
 *     {"id": "total", "args": ["100"], "after": ["a", "b"]}]}
 *   EOF
 *   cairn --server http://127.0.0.1:8080 submit sum.json
 *   example-embed_worker --server http://127.0.0.1:8080 --exit-when-idle 5
 *   cairn --server http://127.0.0.1:8080 results 1      (total: 106)
 *
 * SIGINT/SIGTERM stop it through cairn_worker_stop(), which is safe to call
 * from a signal handler.
 */
#include <cairn/worker.h>

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cairn_worker *volatile g_worker;

static void on_signal(int sig) {
  (void)sig;
  cairn_worker_stop(g_worker);
}

/* Adds the integer in text[0..len) to *sum. Returns 0, or -1 when it is not
 * an integer or the sum overflows. */
static int add_integer(const char *text, size_t len, long long *sum) {
  char buf[32];
  char *end = NULL;
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end)
    return -1;
  return __builtin_add_overflow(*sum, v, sum) ? -1 : 0;
}

/* Adds every whitespace-separated integer of the file at path. */
static int add_file(const char *path, long long *sum, cairn_task_output *out) {
  char word[32];
  size_t n = 0;
  int c, rc = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    cairn_task_output_printf(out, "sum: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  do {
    c = fgetc(f);
    if (c == EOF || isspace(c)) {
      if (n && add_integer(word, n, sum) != 0)
        rc = -1;
      n = 0;
    } else if (n < sizeof word)
      word[n++] = (char)c;
    else
      rc = -1;
  } while (c != EOF && rc == 0);
  fclose(f);
  if (rc != 0)
    cairn_task_output_printf(out, "sum: %s holds something that is not an integer\n", path);
  return rc;
}

/* The "sum" app: the worker calls it on a task thread for each task. */
static int sum_app(const cairn_task *task, cairn_task_output *out, void *userdata) {
  (void)userdata;
  long long sum = 0;
  for (size_t i = 0; i < task->nargs; i++)
    if (add_integer(task->args[i], strlen(task->args[i]), &sum) != 0) {
      cairn_task_output_printf(out, "sum: argument %zu (\"%s\") is not an integer\n", i + 1,
                               task->args[i]);
      return 2;
    }
  for (size_t i = 0; i < task->nparents; i++)
    if (add_file(task->parents[i].path, &sum, out) != 0)
      return 2;
  return cairn_task_output_printf(out, "%lld\n", sum) == 0 ? 0 : 1;
}

static void usage(FILE *f) {
  fputs("usage: example-embed_worker --server URL [--dir DIR] [--slots N]\n"
        "                            [--exit-when-idle SECONDS] [--max-tasks N]\n",
        f);
}

int main(int argc, char **argv) {
  cairn_worker_config cfg;
  cairn_worker_config_init(&cfg);
  cairn_error err;
  cfg.dir = "./cairn-embed-worker";
  cfg.log_level = CAIRN_LOG_INFO;
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(flag, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (!value) {
      fprintf(stderr, "example-embed_worker: %s needs a value\n", flag);
      return 2;
    }
    i++;
    if (strcmp(flag, "--server") == 0)
      cfg.server_url = value;
    else if (strcmp(flag, "--dir") == 0)
      cfg.dir = value;
    else if (strcmp(flag, "--slots") == 0)
      cfg.slots = (unsigned)strtoul(value, NULL, 10);
    else if (strcmp(flag, "--exit-when-idle") == 0)
      cfg.exit_when_idle = (unsigned)strtoul(value, NULL, 10);
    else if (strcmp(flag, "--max-tasks") == 0)
      cfg.max_tasks = strtoul(value, NULL, 10);
    else {
      fprintf(stderr, "example-embed_worker: unknown option \"%s\"\n", flag);
      return 2;
    }
  }
  if (!cfg.server_url) {
    usage(stderr);
    return 2;
  }

  cairn_worker *w = cairn_worker_create(&cfg, &err);
  if (!w) {
    fprintf(stderr, "example-embed_worker: %s\n", err.text);
    return 2;
  }
  if (cairn_worker_add_callback_app(w, "sum", sum_app, NULL, &err) != CAIRN_OK) {
    fprintf(stderr, "example-embed_worker: %s\n", err.text);
    cairn_worker_delete(w);
    return 1;
  }
  g_worker = w;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);

  cairn_status rc = cairn_worker_run(w, &err);
  cairn_worker_stats st;
  cairn_worker_get_stats(w, &st);
  if (rc != CAIRN_OK)
    fprintf(stderr, "example-embed_worker: %s (%s)\n", err.text, cairn_strerror(rc));
  printf("tasks done %llu, failed %llu, dropped %llu\n", st.tasks_done, st.tasks_failed,
         st.tasks_dropped);
  g_worker = NULL;
  cairn_worker_delete(w);
  return rc == CAIRN_OK ? 0 : 1;
}
