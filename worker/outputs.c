/* outputs.c — collect, hash and upload a task's output files; keep the
 * stderr tail (outputs.h). */
#include "worker/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/protocol.h"
#include "common/sha256.h"
#include "worker/backoff.h"
#include "worker/resume.h"

#define EXIT_OUTPUT_FAILED 125

void cairn__outputs_free(cairn__outputs *o) {
  cairn__buf_free(&o->err_tail);
  free(o->files);
  for (size_t i = 0; i < o->nchunks; i++)
    json_decref(o->chunks[i]);
  free(o->chunks);
  memset(o, 0, sizeof *o);
}

/* Why an opened output file (or stderr) st may not be read and sent: NULL
 * when it is a regular file with one link on dev, the task directory's
 * device. A second link means the same bytes have another name, which may
 * lie outside the task directory (`ln ../../credentials.json out.txt`, or
 * `ln /etc/shadow out.txt` by an app running as root); another device is
 * not the task's own file. Pure. */
static const char *unsafe_file(const struct stat *st, dev_t dev) {
  if (!S_ISREG(st->st_mode))
    return "is not a regular file";
  if (st->st_nlink != 1)
    return "has more than one link (a hard link to a file that may lie outside the task "
           "directory)";
  if (st->st_dev != dev)
    return "lies on another device than the task directory";
  return NULL;
}

/* Opens path (under a task directory on device dev) for reading without
 * following a symbolic link nor blocking on a FIFO; -1 with errno set, or
 * with errno 0 and *why set when the opened file is unsafe (unsafe_file). */
static int open_own(const char *path, dev_t dev, const char **why) {
  struct stat st;
  *why = NULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  if (fstat(fd, &st) != 0 || (*why = unsafe_file(&st, dev)) != NULL) {
    int e = *why ? 0 : errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* Keeps the last CAIRN_STDERR_TAIL bytes of path (on device dev) in b.
 * Returns why it was refused (unsafe_file), or NULL (read, or absent). */
static const char *read_tail(const char *path, dev_t dev, cairn__buf *b) {
  cairn__buf_init(b, CAIRN_STDERR_TAIL + 1024u); /* room for the worker's own line */
  const char *why = NULL;
  int fd = open_own(path, dev, &why);
  struct stat st;
  if (fd < 0)
    return why;
  if (fstat(fd, &st) == 0) {
    off_t from = st.st_size > (off_t)CAIRN_STDERR_TAIL ? st.st_size - CAIRN_STDERR_TAIL : 0;
    char buf[8192];
    ssize_t n;
    size_t left = CAIRN_STDERR_TAIL;
    while (left && (n = pread(fd, buf, left < sizeof buf ? left : sizeof buf, from)) > 0) {
      if (cairn__buf_append(b, buf, (size_t)n))
        break;
      from += n;
      left -= (size_t)n;
    }
  }
  close(fd);
  return NULL;
}

/* Appends "cairn-worker: TEXT\n" to the tail, dropping its oldest bytes so
 * that it stays within CAIRN_STDERR_TAIL. */
static void note(cairn__buf *b, const char *text) {
  char line[700];
  int n = snprintf(line, sizeof line, "cairn-worker: %s\n", text);
  size_t len = n < 0 ? 0 : (size_t)n >= sizeof line ? sizeof line - 1 : (size_t)n;
  if (b->len + len > CAIRN_STDERR_TAIL) {
    size_t drop = b->len + len - CAIRN_STDERR_TAIL;
    if (drop > b->len)
      drop = b->len;
    memmove(b->data, b->data + drop, b->len - drop);
    b->len -= drop;
  }
  if (cairn__buf_append(b, line, len))
    return; /* the tail is capped with room for this line: cannot happen */
}

/* dir with glob's special characters escaped, then "/" and pattern. */
static char *glob_path(const char *dir, const char *pattern) {
  size_t n = strlen(dir), k = 0;
  char *s = malloc(2 * n + strlen(pattern) + 2);
  if (!s)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (strchr("*?[]\\", dir[i]))
      s[k++] = '\\';
    s[k++] = dir[i];
  }
  s[k++] = '/';
  strcpy(s + k, pattern);
  return s;
}

/* 1 for names the worker itself puts in the directory. */
static int own_file(const char *rel) {
  return strcmp(rel, "stderr") == 0 || strncmp(rel, "inputs/", 7) == 0 ||
         strncmp(rel, "parents/", 8) == 0;
}

/* The task directory outputs are collected from: its path as given, its
 * resolved path and its device. */
typedef struct task_dir {
  const char *dir;
  char real[PATH_MAX];
  dev_t dev;
} task_dir;

/* Hashes output rel (path m) from one descriptor, refused unless it is
 * safe there (open_own): what is hashed is the file that was checked. */
static cairn_status hash_file(const task_dir *d, const char *m, const char *rel, char hex[65],
                              int64_t *size, cairn_error *err) {
  const char *why = NULL;
  int fd = open_own(m, d->dev, &why);
  if (fd < 0 && why)
    return cairn__error_set(err, CAIRN_EINVAL, "output %s %s: refused", rel, why);
  if (fd < 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot read output %s: %s", m, strerror(errno));
  cairn__sha256 h;
  cairn__sha256_init(&h);
  char buf[65536];
  ssize_t n;
  int64_t total = 0;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    cairn__sha256_update(&h, buf, (size_t)n);
    total += n;
  }
  close(fd);
  if (n < 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot read output %s: %s", m, strerror(errno));
  cairn__sha256_final_hex(&h, hex);
  *size = total;
  return CAIRN_OK;
}

/* Checks match m (under d) and adds it. */
static cairn_status add_match(const task_dir *d, const char *m, const cairn__output_pattern *pat,
                              cairn__output_file *files, size_t *n, cairn_error *err) {
  const char *rel = m + strlen(d->dir) + 1;
  struct stat st;
  char resolved[PATH_MAX];
  if (own_file(rel) || !cairn__output_name_ok(rel))
    return CAIRN_OK;
  for (size_t i = 0; i < *n; i++)
    if (strcmp(files[i].name, rel) == 0)
      return CAIRN_OK; /* matched by an earlier pattern */
  if (lstat(m, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (pat->glob)
      return CAIRN_OK; /* a glob takes regular files only */
    return cairn__error_set(err, CAIRN_EINVAL, "output %s is not a regular file", rel);
  }
  size_t rl = strlen(d->real);
  if (!realpath(m, resolved) || strncmp(resolved, d->real, rl) != 0 || resolved[rl] != '/')
    return cairn__error_set(err, CAIRN_EINVAL, "output %s lies outside the task directory", rel);
  if (*n >= CAIRN_MAX_OUTPUT_FILES)
    return cairn__error_set(err, CAIRN_EINVAL, "more than %u output files",
                           CAIRN_MAX_OUTPUT_FILES);
  if ((int64_t)st.st_size > pat->max_mib * 1024 * 1024)
    return cairn__error_set(err, CAIRN_EINVAL, "output %s has %lld bytes, over its cap of %lld MiB",
                           rel, (long long)st.st_size, (long long)pat->max_mib);
  cairn__output_file *f = &files[*n];
  snprintf(f->name, sizeof f->name, "%s", rel);
  cairn_status rc = hash_file(d, m, rel, f->sha256, &f->size, err);
  if (rc == CAIRN_OK && f->size > pat->max_mib * 1024 * 1024)
    rc = cairn__error_set(err, CAIRN_EINVAL, "output %s grew over its cap of %lld MiB", rel,
                         (long long)pat->max_mib);
  if (rc == CAIRN_OK)
    (*n)++;
  return rc;
}

/* 1 when path is dir's progress file (resume.h), which a pattern naming it
 * matches but which is never an output. */
static int is_progress_file(const char *dir, const char *path) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && path[n] == '/' &&
         strcmp(path + n + 1, CAIRN__PROGRESS_NAME) == 0;
}

cairn_status cairn__outputs_collect(const char *dir, const cairn__output_patterns *p,
                                    cairn__output_file **files, size_t *n, cairn_error *err) {
  task_dir d = {.dir = dir};
  struct stat st;
  *files = calloc(CAIRN_MAX_OUTPUT_FILES, sizeof **files);
  *n = 0;
  if (!*files)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  if (!realpath(dir, d.real) || stat(d.real, &st) != 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot resolve %s: %s", dir, strerror(errno));
  d.dev = st.st_dev;
  cairn_status rc = CAIRN_OK;
  for (uint32_t k = 0; rc == CAIRN_OK && k < p->n; k++) {
    char *pat = glob_path(dir, p->v[k].name);
    glob_t g = {0};
    if (!pat)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    int gr = glob(pat, GLOB_NOSORT, NULL, &g);
    free(pat);
    if (gr == GLOB_NOMATCH && !p->v[k].glob)
      rc = cairn__error_set(err, CAIRN_EINVAL, "the required output %s is missing",
                           p->v[k].name);
    else if (gr != 0 && gr != GLOB_NOMATCH)
      rc = cairn__error_set(err, CAIRN_EIO, "cannot list the outputs %s", p->v[k].name);
    for (size_t i = 0; rc == CAIRN_OK && gr == 0 && i < g.gl_pathc; i++)
      if (!is_progress_file(dir, g.gl_pathv[i])) /* the worker's, not an output */
        rc = add_match(&d, g.gl_pathv[i], &p->v[k], *files, n, err);
    globfree(&g);
  }
  return rc;
}

/* Uploads file f (dir/f->name) for index, retrying transient failures. */
static cairn_status upload(cairn__session *s, cairn__conn *c, const char *dir,
                           const cairn__output_file *f, long long index,
                           const cairn__cancel *cancel, cairn_error *err) {
  char url[160], *path = NULL;
  cairn__backoff b;
  cairn__backoff_init(&b, 100, 5000);
  snprintf(url, sizeof url, "/v1/results/%lld/files/%s", index, f->sha256);
  if (asprintf(&path, "%s/%s", dir, f->name) < 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status rc;
  for (;;) {
    long status = 0;
    cairn__buf body;
    char msg[300] = "";
    cairn__buf_init(&body, 4096);
    cairn__session_prepare(s, c);
    rc = cairn__http_upload(c->http, url, path, &status, &body, err);
    if (rc == CAIRN_OK)
      cairn__server_message(body.data, body.len, msg, sizeof msg);
    cairn__buf_free(&body);
    if (rc == CAIRN_OK && (status == 200 || status == 201))
      break;
    if (cairn__cancelled(cancel)) {
      rc = cairn__error_set(err, CAIRN_EIO, "cancelled");
      break;
    }
    if (rc == CAIRN_OK && !cairn__transient(rc, status)) {
      rc = cairn__error_set(err, status == 403 || status == 409 ? CAIRN_ECONFLICT : CAIRN_EINVAL,
                           "upload of output %s: HTTP %ld: %s", f->name, status, msg);
      break;
    }
    CAIRN_WARN(s->log, "upload of output %s: %s (retrying)", f->name,
               rc == CAIRN_OK ? msg : err->text);
    if (cairn__cancel_sleep(cancel, cairn__backoff_next(&b))) {
      rc = cairn__error_set(err, CAIRN_EIO, "cancelled");
      break;
    }
  }
  free(path);
  return rc;
}

/* The chunk digests of kept file f for the result (feature "kept_chunks"),
 * while *budget (chunks a result may still carry) allows: NULL when it
 * does not, or the cached copy cannot be read (then copies of f are
 * checked whole). Reads the file once. */
static json_t *kept_chunks(cairn__session *s, cairn__cache *cache, const cairn__output_file *f,
                           size_t *budget) {
  size_t n = (size_t)((f->size + CAIRN_CHUNK_SIZE - 1) / CAIRN_CHUNK_SIZE);
  if (n > *budget || n > CAIRN_MAX_CHUNKS)
    return NULL;
  char *path = cairn__cache_path(cache, f->sha256);
  json_t *list = path ? cairn__chunks_of_file(path, f->size) : NULL;
  free(path);
  if (!list)
    CAIRN_WARN(s->log, "output %s: its chunk digests could not be read (copies of it are "
               "checked whole)", f->name);
  else
    *budget -= n;
  return list;
}

/* Keeps file f (dir/f->name, dir on device dev) in cache (keep.c on the
 * master): 1 when it is, 0 when it must be uploaded after all. The file is
 * checked again first (open_own), since adopting it changes its mode and
 * name: one the app linked or swapped since it was collected is not kept
 * (its upload then fails the digest check at the master). */
static int keep(cairn__session *s, cairn__cache *cache, const char *dir, dev_t dev,
                const cairn__output_file *f) {
  char *path = NULL;
  const char *why = NULL;
  cairn_error err = {0};
  if (asprintf(&path, "%s/%s", dir, f->name) < 0)
    return 0;
  int fd = open_own(path, dev, &why);
  if (fd < 0) {
    CAIRN_WARN(s->log, "output %s %s (not kept)", f->name, why ? why : strerror(errno));
    free(path);
    return 0;
  }
  close(fd);
  int kept = cairn__cache_adopt(cache, path, f->sha256, &err) == CAIRN_OK;
  if (kept) {
    cairn__peerstate_have(s->peers, f->sha256);
    cairn__peerstate_kept(s->peers, f->sha256);
  }
  else
    CAIRN_WARN(s->log, "output %s: %s (uploaded instead)", f->name, err.text);
  free(path);
  return kept;
}

cairn_status cairn__outputs_gather(cairn__outputs *o, cairn__session *s, cairn__conn *c,
                                   cairn__cache *cache, const char *dir, const cairn__task *t,
                                   int *exit_status, const cairn__cancel *cancel) {
  char *errpath = NULL;
  const char *why = NULL;
  cairn_error err = {0};
  struct stat ds;
  memset(o, 0, sizeof *o);
  dev_t dev = stat(dir, &ds) == 0 ? ds.st_dev : (dev_t)-1;
  if (asprintf(&errpath, "%s/stderr", dir) >= 0)
    why = read_tail(errpath, dev, &o->err_tail);
  else
    cairn__buf_init(&o->err_tail, CAIRN_STDERR_TAIL + 1024u);
  free(errpath);
  if (why) { /* the app replaced its stderr: a link to a file not its own */
    snprintf(err.text, sizeof err.text, "stderr %s: not read", why);
    note(&o->err_tail, err.text);
  }
  if (*exit_status != 0 || t->outputs.n == 0)
    return CAIRN_OK;
  cairn_status rc = cairn__outputs_collect(dir, &t->outputs, &o->files, &o->nfiles, &err);
  int features = s->peers ? cairn__peerstate_features(s->peers) : -1;
  int kept = t->keep && cache && features >= 0 && ((unsigned)features & CAIRN_FEAT_KEEP);
  int lists = kept && ((unsigned)features & CAIRN_FEAT_KEPT_CHUNKS);
  size_t budget = CAIRN_MAX_RESULT_CHUNKS;
  if (lists && o->nfiles && !(o->chunks = calloc(o->nfiles, sizeof *o->chunks)))
    lists = 0;
  o->nchunks = lists ? o->nfiles : 0;
  for (size_t i = 0; rc == CAIRN_OK && i < o->nfiles; i++)
    if (!kept || !keep(s, cache, dir, dev, &o->files[i]))
      rc = upload(s, c, dir, &o->files[i], t->index, cancel, &err);
    else if (lists)
      o->chunks[i] = kept_chunks(s, cache, &o->files[i], &budget);
  if (rc == CAIRN_EIO && cairn__cancelled(cancel))
    return CAIRN_EIO;
  if (rc != CAIRN_OK) {
    note(&o->err_tail, err.text);
    o->nfiles = 0;
    *exit_status = EXIT_OUTPUT_FAILED;
  }
  return CAIRN_OK;
}
