/* taskdir.c — build DIR/run/<index>/ with inputs/ and parents/. */
#include "worker/taskdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"
#include "worker/backoff.h"
#include "worker/fetch.h"
#include "worker/fsutil.h"

static int safe_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == ',' || c == '=' || c == '+' || c == '-';
}

cairn_status cairn__encode_id(const char *id, char **out, cairn_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(id);
  *out = NULL;
  if (n == 0)
    return cairn_error_set(err, CAIRN_EINVAL, "a task id is empty: it has no file name");
  if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0) {
    *out = strdup(n == 1 ? "%2E" : "%2E%2E");
    return *out ? CAIRN_OK : cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  char *s = malloc(3 * n + 1);
  if (!s)
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)id[i];
    if (safe_byte(c))
      s[k++] = (char)c;
    else {
      s[k++] = '%';
      s[k++] = hex[c >> 4];
      s[k++] = hex[c & 15];
    }
  }
  s[k] = '\0';
  *out = s;
  return CAIRN_OK;
}

int cairn__input_name_ok(const char *name) {
  return name[0] != '\0' && !strchr(name, '/') && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0;
}

void cairn__taskdir_free(cairn__taskdir *d) {
  for (size_t i = 0; d->input_paths && i < d->ninputs; i++)
    free(d->input_paths[i]);
  for (size_t i = 0; d->parent_paths && i < d->nparents; i++)
    free(d->parent_paths[i]);
  free(d->input_paths);
  free(d->parent_paths);
  free(d->dir);
  memset(d, 0, sizeof *d);
}

void cairn__taskdir_remove(cairn__taskdir *d) {
  cairn_error err;
  if (d->dir && cairn__remove_tree(d->dir, &err) != CAIRN_OK)
    CAIRN_WARN("%s", err.text);
}

cairn_status cairn__taskdir_create(const char *run_root, const cairn__task *t,
                                   cairn__taskdir *d, cairn_error *err) {
  cairn_status rc = CAIRN_OK;
  char *sub = NULL;
  memset(d, 0, sizeof *d);
  if (asprintf(&d->dir, "%s/%lld", run_root, t->index) < 0) {
    d->dir = NULL;
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  d->input_paths = calloc(t->ninputs + 1, sizeof *d->input_paths);
  d->parent_paths = calloc(t->nparents + 1, sizeof *d->parent_paths);
  if (!d->input_paths || !d->parent_paths)
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  d->ninputs = t->ninputs;
  d->nparents = t->nparents;
  for (size_t i = 0; i < t->ninputs; i++) {
    const char *name = t->inputs[i].name;
    if (!cairn__input_name_ok(name))
      return cairn_error_set(err, CAIRN_EINVAL, "input name \"%.100s\" is not a file name", name);
    if (asprintf(&d->input_paths[i], "%s/inputs/%s", d->dir, name) < 0) {
      d->input_paths[i] = NULL;
      return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  }
  for (size_t i = 0; i < t->nparents; i++) {
    char *enc = NULL;
    rc = cairn__encode_id(t->parents[i].id, &enc, err);
    if (rc != CAIRN_OK)
      return rc;
    int bad = asprintf(&d->parent_paths[i], "%s/parents/%s", d->dir, enc) < 0;
    free(enc);
    if (bad) {
      d->parent_paths[i] = NULL;
      return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  }
  rc = cairn__remove_tree(d->dir, err);
  if (rc == CAIRN_OK)
    rc = cairn__mkdirs(d->dir, 0755, err);
  for (int k = 0; k < 2 && rc == CAIRN_OK; k++) {
    sub = cairn__path_join(d->dir, k ? "parents" : "inputs");
    rc = sub ? cairn__mkdirs(sub, 0755, err) : cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    free(sub);
  }
  return rc;
}

/* Sets err to "WHAT NAME: <its previous text>" with status rc. */
static cairn_status prefixed(cairn_error *err, cairn_status rc, const char *what,
                             const char *name) {
  char why[sizeof err->text];
  snprintf(why, sizeof why, "%s", err->text);
  return cairn_error_set(err, rc, "%s %.100s: %s", what, name, why);
}

/* Fetches input i into the cache (see fetch.h) and links it into inputs/. */
static cairn_status fill_input(cairn__taskdir *d, const cairn__input *in, size_t i,
                               cairn__cache *cache, cairn_http *h, cairn__peerstate *peers,
                               const cairn__cancel *cancel, cairn_error *err) {
  char *cached = NULL;
  cairn_status rc = cairn__fetch_input(cache, h, peers, in, cancel, &cached, err);
  if (rc == CAIRN_EIO)
    return rc;
  if (rc != CAIRN_OK)
    return prefixed(err, rc, "input", in->name);
  rc = cairn__link_or_copy(cached, d->input_paths[i], err);
  free(cached);
  return rc;
}

/* Downloads parent i's output into parents/. */
static cairn_status fill_parent(cairn__taskdir *d, const cairn__parent *p, size_t i,
                                cairn_http *h, const cairn__cancel *cancel, cairn_error *err) {
  cairn__backoff b;
  cairn__backoff_init(&b, 100, 5000);
  for (;;) {
    long status = 0;
    if (cairn__cancelled(cancel))
      return cairn_error_set(err, CAIRN_EIO, "cancelled");
    cairn_status rc =
      cairn_http_download(h, p->url, d->parent_paths[i], NULL, CAIRN_MAX_OUTPUT, &status, err);
    if (rc == CAIRN_OK)
      return CAIRN_OK;
    if (cairn__cancelled(cancel))
      return cairn_error_set(err, CAIRN_EIO, "cancelled");
    if (rc == CAIRN_ETOOBIG || !(status == 0 || status == 429 || status >= 500))
      return prefixed(err, CAIRN_EINVAL, "output of parent", p->id);
    CAIRN_WARN("output of parent %s: %s (retrying)", p->id, err->text);
    if (cairn__cancel_sleep(cancel, cairn__backoff_next(&b)))
      return cairn_error_set(err, CAIRN_EIO, "cancelled");
  }
}

cairn_status cairn__taskdir_fill(cairn__taskdir *d, const cairn__task *t, cairn__cache *cache,
                                 cairn_http *h, cairn__peerstate *peers,
                                 const cairn__cancel *cancel, cairn_error *err) {
  cairn_status rc = CAIRN_OK;
  for (size_t i = 0; i < t->ninputs && rc == CAIRN_OK; i++)
    rc = fill_input(d, &t->inputs[i], i, cache, h, peers, cancel, err);
  for (size_t i = 0; i < t->nparents && rc == CAIRN_OK; i++)
    rc = fill_parent(d, &t->parents[i], i, h, cancel, err);
  return rc;
}
