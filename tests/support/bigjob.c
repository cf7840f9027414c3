/* bigjob.c — see bigjob.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/sha256.h"
#include "tests/support/bigjob.h"
#include "tests/support/editdist.h"
#include "tests/support/harness.h"

unsigned char *bigjob_data(size_t size, unsigned seed) {
  unsigned char *data = malloc(size);
  for (size_t i = 0; data && i < size; i++) {
    seed = seed * 1664525u + 1013904223u;
    data[i] = (unsigned char)(seed >> 24);
  }
  return data;
}

void bigjob_write(const char *dir, const char *name, const unsigned char *data, size_t size,
                  int n, char sha[65]) {
  char path[4200], text[8192];
  cairn__sha256_hex(data, size, sha);
  snprintf(path, sizeof path, "%s/big.bin", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, size, f), size);
  fclose(f);
  snprintf(path, sizeof path, "%s/gate", dir); /* bigjob_release's file; workers bind it */
  assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
  snprintf(path, sizeof path, "%s/big.bin", dir);
  size_t k = (size_t)snprintf(text, sizeof text,
                              "{\"name\": \"%s\", \"app\": \"sum\", \"policy\": \"fifo\", "
                              "\"lease_seconds\": 10, \"max_attempts\": 10, \"files\": "
                              "[{\"name\": \"big.bin\", \"path\": \"%s\", \"broadcast\": true}], "
                              "\"tasks\": [",
                              name, path);
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(text + k, sizeof text - k,
                          "%s{\"id\": \"t%d\", \"args\": [\"-c\", "
                          "\"sha256sum inputs/big.bin && n=0 && while [ ! -e %s/gate/go ] && "
                          "[ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done\"], "
                          "\"inputs\": [\"big.bin\"]}",
                          i ? ", " : "", i, dir);
  assert_true(k < sizeof text);
  snprintf(text + k, sizeof text - k, "]}\n");
  snprintf(path, sizeof path, "%s/job.json", dir);
  assert_int_equal(harness_write_file(path, text), 0);
}

void bigjob_release(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/gate/go", dir);
  assert_int_equal(harness_write_file(path, "go\n"), 0);
}

pid_t bigjob_worker(const char *url, const char *dir, const char *name, const char *cluster,
                    const char *stall, const char *limit) {
  char gate[4200]; /* the tasks wait for DIR/gate/go: shown read-only in their sandbox */
  snprintf(gate, sizeof gate, "%s/gate", dir);
  const char *args[] = {"--app", "sum=/bin/sh", "--cluster", cluster, "--slots", "1",
                        "--exit-when-idle", "60", "--stall-timeout", stall, "--log-level", "info",
                        "--sandbox-bind", gate, limit ? "--download-limit" : NULL, limit, NULL};
  pid_t p = harness_worker(url, dir, name, args);
  assert_true(p > 0);
  return p;
}

int bigjob_log_line(const char *dir, const char *name, const char *text, char *out, size_t len) {
  char path[4200], line[4300];
  int found = 0;
  snprintf(path, sizeof path, "%s/%s.log", dir, name);
  if (out && len)
    out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  while (!found && fgets(line, sizeof line, f))
    if (strstr(line, text)) {
      found = 1;
      if (out && len)
        snprintf(out, len, "%s", line);
    }
  fclose(f);
  return found;
}

int bigjob_await_log(const char *dir, const char *name, const char *text, double timeout) {
  for (double until = harness_now() + timeout; harness_now() < until; usleep(20 * 1000))
    if (bigjob_log_line(dir, name, text, NULL, 0))
      return 1;
  return bigjob_log_line(dir, name, text, NULL, 0);
}

int bigjob_await_cached(const char *dir, const char *name, const char *sha, double timeout) {
  char path[4300];
  snprintf(path, sizeof path, "%s/%s/cache/%s", dir, name, sha);
  for (double until = harness_now() + timeout; harness_now() < until; usleep(50 * 1000))
    if (access(path, F_OK) == 0)
      return 1;
  return access(path, F_OK) == 0;
}

void bigjob_check_outputs(const char *url, long long job, int n, const char *sha) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL),
                   200);
  json_t *tasks = json_object_get(r, "tasks");
  assert_int_equal(json_array_size(tasks), (size_t)n);
  for (size_t i = 0; i < json_array_size(tasks); i++) {
    json_t *t = json_array_get(tasks, i);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    assert_memory_equal(json_string_value(json_object_get(t, "output")), sha, 64);
  }
  json_decref(r);
}

void bigjob_kill9(pid_t pid) {
  kill(pid, SIGKILL);
  int st = harness_wait(pid, 30);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

void bigjob_read_head(int fd, char *req, size_t len) {
  size_t n = 0;
  req[0] = '\0';
  while (n < len - 1 && !strstr(req, "\r\n\r\n")) {
    ssize_t k = recv(fd, req + n, len - 1 - n, 0);
    if (k <= 0)
      break;
    n += (size_t)k;
    req[n] = '\0';
  }
}
