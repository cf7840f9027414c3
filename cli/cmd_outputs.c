/* cmd_outputs.c — cairn results JOB --dir OUT: download every output file
 * of a job's accepted results into OUT/TASK/NAME (TASK encoded as in a
 * worker's task directory), each verified against its sha256. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/limits.h"
#include "common/outputs.h"
#include "common/sha256.h"
#include "common/termsafe.h"
#include "worker/taskdir.h"
#include "worker/transport.h"

/* s percent-encoded for a query value (caller frees). */
static char *query_escape(const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  char *out = malloc(3 * strlen(s) + 1), *o = out;
  if (!out)
    return NULL;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
        strchr("-._~", *p))
      *o++ = (char)*p;
    else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  *o = '\0';
  return out;
}

/* Creates every folder of path above its last component. 0 or -1. */
static int make_parents(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
    *p = '/';
    if (bad)
      return -1;
  }
  return 0;
}

/* Downloads one file; 0, 2 when the master has no copy (an output kept
 * on workers: said and skipped), or 1 after printing why. */
static int fetch_one(cairn__http *h, long long job, const char *dir, const char *task,
                     json_t *f, size_t *bytes) {
  const char *name = json_string_value(json_object_get(f, "name"));
  const char *sha = json_string_value(json_object_get(f, "sha256"));
  char safe[CAIRN_TERMSAFE_NAME];
  if (!name || !cairn__output_name_ok(name) || !sha || !cairn__sha256_valid_hex(sha))
    return cairn__cli_fail("the master named an output file that is no safe relative path: %s",
                          cairn__termsafe(name ? name : "?", safe, sizeof safe));
  char *etask = NULL, *qt = query_escape(task), *qn = query_escape(name), *url = NULL;
  char *dest = NULL;
  cairn_error err = {0};
  int rc = 1;
  if (cairn__encode_id(task, &etask, &err) != CAIRN_OK || !qt || !qn ||
      asprintf(&url, "/v1/jobs/%lld/output?task=%s&name=%s", job, qt, qn) < 0 ||
      asprintf(&dest, "%s/%s/%s", dir, etask, name) < 0) {
    url = dest = NULL;
    cairn__cli_fail("out of memory");
    goto out;
  }
  if (make_parents(dest)) {
    cairn__cli_fail("cannot create the folders of %s: %s", dest, strerror(errno));
    goto out;
  }
  long status = 0;
  cairn_status drc = cairn__http_download(h, url, dest, sha, CAIRN_MAX_FILE, &status, &err);
  if (drc != CAIRN_OK && status == 404) {
    fprintf(stderr, "cairn: output %s of task %s is kept on workers, not at the master: "
            "skipped\n", cairn__termsafe(name, safe, sizeof safe), etask);
    rc = 2;
    goto out;
  } else if (drc != CAIRN_OK) {
    cairn__cli_fail("output %s of task %s: %s", cairn__termsafe(name, safe, sizeof safe),
                   etask, status ? "the master refused it" : err.text);
    goto out;
  }
  *bytes += (size_t)json_integer_value(json_object_get(f, "size"));
  rc = 0;
out:
  free(etask);
  free(qt);
  free(qn);
  free(url);
  free(dest);
  return rc;
}

int cairn__cli_fetch_outputs(cairn__http *h, long long job, json_t *tasks, const char *dir) {
  size_t i, k, files = 0, bytes = 0, kept = 0;
  json_t *t, *f;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return cairn__cli_fail("cannot create %s: %s", dir, strerror(errno));
  json_array_foreach(tasks, i, t) {
    const char *task = json_string_value(json_object_get(t, "id"));
    json_array_foreach(json_object_get(t, "outputs"), k, f) {
      int rc = task ? fetch_one(h, job, dir, task, f, &bytes) : 1;
      if (rc == 1)
        return 1;
      files += rc == 0;
      kept += rc == 2;
    }
  }
  fprintf(stderr, "cairn: %zu output files (%zu bytes) in %s, each sha256 verified%s\n", files,
          bytes, dir, kept ? "; the others are kept on workers" : "");
  return 0;
}
