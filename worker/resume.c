/* resume.c — task records that outlive the worker, and apps' progress
 * (resume.h). */
#include "worker/resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "worker/fsutil.h"

#define RECORD_MAX (20u * 1024u * 1024u) /* a work offer is at most 16 MiB */
#define PROGRESS_READ_MAX 32              /* bytes of a progress file read; longer: ignored */

int cairn__resume_init(cairn__resume *r, const char *run_dir, size_t slots,
                       const cairn__logger *log) {
  memset(r, 0, sizeof *r);
  r->run_dir = strdup(run_dir);
  r->s = calloc(slots ? slots : 1, sizeof *r->s);
  if (!r->run_dir || !r->s) {
    free(r->run_dir);
    free(r->s);
    memset(r, 0, sizeof *r);
    return -1;
  }
  r->slots = slots;
  r->log = log;
  for (size_t i = 0; i < slots; i++) {
    r->s[i].index = -1;
    r->s[i].progress = -1;
  }
  pthread_mutex_init(&r->mu, NULL);
  return 0;
}

void cairn__resume_destroy(cairn__resume *r) {
  if (!r->s)
    return;
  for (size_t i = 0; i < r->slots; i++) {
    cairn__task_free(r->s[i].pending);
    free(r->s[i].progress_path);
  }
  pthread_mutex_destroy(&r->mu);
  free(r->s);
  free(r->run_dir);
  memset(r, 0, sizeof *r);
}

/* DIR/run/slot-<i>.task, or DIR/run/slot-<i> when dir (caller frees). */
static char *slot_path(const cairn__resume *r, size_t slot, int dir) {
  char *p = NULL;
  if (asprintf(&p, "%s/slot-%zu%s", r->run_dir, slot, dir ? "" : ".task") < 0)
    return NULL;
  return p;
}

static void sync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

/* Removes slot i's record and directory (under mu or before the threads). */
static void drop_slot(cairn__resume *r, size_t slot) {
  cairn_error err = {0};
  char *rec = slot_path(r, slot, 0), *dir = slot_path(r, slot, 1);
  if (rec)
    unlink(rec);
  if (dir && cairn__remove_tree(dir, &err) != CAIRN_OK)
    CAIRN_WARN(r->log, "%s", err.text);
  free(rec);
  free(dir);
  cairn__task_free(r->s[slot].pending);
  r->s[slot].pending = NULL;
}

/* The slot number of a name "slot-<i>" followed by suffix, or -1. */
static long slot_of(const char *name, const char *suffix) {
  if (strncmp(name, "slot-", 5) != 0 || name[5] < '0' || name[5] > '9' ||
      (name[5] == '0' && name[6] >= '0' && name[6] <= '9'))
    return -1;
  char *end = NULL;
  errno = 0;
  unsigned long n = strtoul(name + 5, &end, 10);
  if (errno || n > 1u << 20 || strcmp(end, suffix) != 0)
    return -1;
  return (long)n;
}

/* Reads slot i's record: its task (t->resumed set) when its lease may still
 * hold and its app is one the worker runs; else NULL (logged why). */
static cairn__task *load_record(cairn__resume *r, size_t slot, int (*app_ok)(void *, const char *),
                                void *ud) {
  char *path = slot_path(r, slot, 0);
  cairn__buf text = {0};
  cairn_error err = {0};
  struct stat st;
  cairn__task *t = NULL;
  if (!path || stat(path, &st) != 0 ||
      cairn__read_file(path, RECORD_MAX, &text, &err) != CAIRN_OK) {
    free(path);
    cairn__buf_free(&text);
    return NULL;
  }
  json_t *root = json_loadb(text.data ? text.data : "", text.len, 0, NULL);
  json_t *ls = json_object_get(root, "lease_seconds");
  long long index = -1;
  if (json_is_integer(ls) && json_integer_value(ls) > 0)
    t = cairn__task_from_json(json_object_get(root, "offer"), &index, &err);
  if (!t)
    CAIRN_INFO(r->log, "slot %zu: unreadable task record %s: dropped", slot, path);
  else if ((long long)st.st_mtime + (long long)json_integer_value(ls) <= (long long)time(NULL)) {
    CAIRN_INFO(r->log, "task %lld (slot %zu): its lease ran out while the worker was away: "
               "dropped without running", t->index, slot);
    cairn__task_free(t);
    t = NULL;
  } else if (!app_ok(ud, t->app)) {
    CAIRN_INFO(r->log, "task %lld (slot %zu): this worker no longer runs app %s: dropped",
               t->index, slot, t->app);
    cairn__task_free(t);
    t = NULL;
  } else {
    t->resumed = 1;
    t->lease_seconds = (long long)json_integer_value(ls);
  }
  json_decref(root);
  cairn__buf_free(&text);
  free(path);
  return t;
}

cairn_status cairn__resume_scan(cairn__resume *r, int (*app_ok)(void *ud, const char *app),
                                void *ud, size_t *pending, cairn_error *err) {
  *pending = 0;
  for (size_t i = 0; i < r->slots; i++) {
    cairn__task_free(r->s[i].pending);
    r->s[i].pending = load_record(r, i, app_ok, ud);
    *pending += r->s[i].pending != NULL;
  }
  DIR *d = opendir(r->run_dir);
  if (!d)
    return cairn__error_set(err, CAIRN_EIO, "cannot read %s: %s", r->run_dir, strerror(errno));
  int dfd = dirfd(d), bad = 0;
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    long k = slot_of(e->d_name, "");
    if (k < 0)
      k = slot_of(e->d_name, ".task");
    if (k >= 0 && (size_t)k < r->slots && r->s[k].pending)
      continue; /* a task to ask the master about: its record and directory */
    if (cairn__remove_at(dfd, e->d_name) != 0)
      bad = 1;
  }
  closedir(d);
  if (bad)
    return cairn__error_set(err, CAIRN_EIO, "cannot empty %s", r->run_dir);
  return CAIRN_OK;
}

size_t cairn__resume_pending(cairn__resume *r, int64_t *out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->slots && n < max; i++)
    if (r->s[i].pending)
      out[n++] = r->s[i].pending->index;
  pthread_mutex_unlock(&r->mu);
  return n;
}

static int listed(const long long *v, size_t n, long long x) {
  for (size_t i = 0; v && i < n; i++)
    if (v[i] == x)
      return 1;
  return 0;
}

void cairn__resume_confirm(cairn__resume *r, const long long *extended, size_t n) {
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->slots; i++) {
    cairn__task *t = r->s[i].pending;
    if (!t)
      continue;
    if (listed(extended, n, t->index)) {
      char *rec = slot_path(r, i, 0);
      if (rec)
        utimensat(AT_FDCWD, rec, NULL, 0); /* its lease starts again now */
      free(rec);
      CAIRN_INFO(r->log, "task %lld (slot %zu): the master still leases it to this volunteer: "
                 "resumed in its directory", t->index, i);
      continue;
    }
    CAIRN_INFO(r->log, "task %lld (slot %zu): the master no longer leases it to this volunteer: "
               "dropped without running", t->index, i);
    drop_slot(r, i);
  }
  pthread_mutex_unlock(&r->mu);
}

void cairn__resume_defer(cairn__resume *r) {
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->slots; i++) {
    if (r->s[i].pending)
      CAIRN_INFO(r->log, "task %lld (slot %zu): the master was not asked: kept for the next "
                 "start", r->s[i].pending->index, i);
    cairn__task_free(r->s[i].pending);
    r->s[i].pending = NULL;
  }
  pthread_mutex_unlock(&r->mu);
}

cairn__task *cairn__resume_take(cairn__resume *r, size_t slot) {
  pthread_mutex_lock(&r->mu);
  cairn__task *t = slot < r->slots ? r->s[slot].pending : NULL;
  if (t)
    r->s[slot].pending = NULL;
  pthread_mutex_unlock(&r->mu);
  return t;
}

void cairn__resume_record(cairn__resume *r, size_t slot, const cairn__task *t, const char *dir,
                          int program) {
  cairn_error err = {0};
  char *path = slot_path(r, slot, 0), *text = NULL, *pf = NULL;
  json_t *o = t->offer ? json_pack("{s:i, s:I, s:I, s:O}", "version", 1, "slot", (json_int_t)slot,
                                   "lease_seconds", (json_int_t)t->lease_seconds, "offer",
                                   t->offer)
                       : NULL;
  text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (program)
    pf = cairn__path_join(dir, CAIRN__PROGRESS_NAME);
  if (!path || !text || (program && !pf))
    CAIRN_WARN(r->log, "task %lld: cannot record it (out of memory): it will not survive a "
               "restart of the worker", t->index);
  else if (cairn__write_file_atomic(path, text, strlen(text), 0600, &err) != CAIRN_OK)
    CAIRN_WARN(r->log, "task %lld: %s: it will not survive a restart of the worker", t->index,
               err.text);
  else
    sync_dir(r->run_dir);
  free(path);
  free(text);
  pthread_mutex_lock(&r->mu);
  free(r->s[slot].progress_path);
  r->s[slot].progress_path = pf;
  r->s[slot].index = t->index;
  r->s[slot].lease_seconds = t->lease_seconds;
  r->s[slot].progress = -1;
  pthread_mutex_unlock(&r->mu);
}

int cairn__resume_recorded(cairn__resume *r, size_t slot) {
  char *path = slot_path(r, slot, 0);
  struct stat st;
  int yes = path && lstat(path, &st) == 0;
  free(path);
  return yes;
}

static void end_slot(cairn__resume *r, size_t slot) {
  pthread_mutex_lock(&r->mu);
  free(r->s[slot].progress_path);
  r->s[slot].progress_path = NULL;
  r->s[slot].index = -1;
  r->s[slot].progress = -1;
  pthread_mutex_unlock(&r->mu);
}

void cairn__resume_forget(cairn__resume *r, size_t slot) {
  char *path = slot_path(r, slot, 0);
  if (path) /* not synced: a record that outlives its task is refused by the master */
    unlink(path);
  free(path);
  end_slot(r, slot);
}

void cairn__resume_keep(cairn__resume *r, size_t slot) { end_slot(r, slot); }

cairn_status cairn__resume_set_progress(cairn__resume *r, size_t slot, double fraction) {
  if (!isfinite(fraction) || fraction < 0 || fraction > 1 || !r || slot >= r->slots)
    return CAIRN_EINVAL;
  pthread_mutex_lock(&r->mu);
  r->s[slot].progress = fraction;
  pthread_mutex_unlock(&r->mu);
  return CAIRN_OK;
}

double cairn__progress_parse(const char *text, size_t len) {
  size_t i = 0, digits = 0, dots = 0;
  while (i < len && (text[i] == ' ' || text[i] == '\t'))
    i++;
  size_t start = i;
  for (; i < len && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.'); i++) {
    digits += text[i] != '.';
    dots += text[i] == '.';
  }
  size_t end = i;
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
    i++;
  if (i != len || digits == 0 || dots > 1 || end - start >= PROGRESS_READ_MAX)
    return -1;
  char num[PROGRESS_READ_MAX + 1];
  memcpy(num, text + start, end - start);
  num[end - start] = '\0';
  double x = strtod(num, NULL);
  return isfinite(x) && x >= 0 && x <= 1 ? x : -1;
}

/* The value in the progress file path, or -1 (missing, not a regular
 * file, too long, not a fraction). */
static double read_progress(const char *path) {
  char buf[PROGRESS_READ_MAX + 1];
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  ssize_t k = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf) : -1;
  close(fd);
  return k > 0 && (size_t)k < sizeof buf ? cairn__progress_parse(buf, (size_t)k) : -1;
}

size_t cairn__resume_progress(cairn__resume *r, cairn__report_progress *out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < r->slots && n < max; i++) {
    char path[4096] = "";
    pthread_mutex_lock(&r->mu);
    long long index = r->s[i].index;
    if (index > 0 && r->s[i].progress_path)
      snprintf(path, sizeof path, "%s", r->s[i].progress_path);
    pthread_mutex_unlock(&r->mu);
    if (index <= 0)
      continue;
    double x = path[0] ? read_progress(path) : -1; /* outside the lock: a file read */
    pthread_mutex_lock(&r->mu);
    if (r->s[i].index == index) { /* the same task still */
      if (x >= 0)
        r->s[i].progress = x;
      if (r->s[i].progress >= 0)
        out[n++] = (cairn__report_progress){index, r->s[i].progress};
    }
    pthread_mutex_unlock(&r->mu);
  }
  return n;
}

void cairn__resume_renewed(cairn__resume *r, const long long *extended, size_t n) {
  for (size_t i = 0; i < r->slots; i++) {
    pthread_mutex_lock(&r->mu);
    long long index = r->s[i].index;
    pthread_mutex_unlock(&r->mu);
    if (index <= 0 || !listed(extended, n, index))
      continue;
    char *rec = slot_path(r, i, 0);
    if (rec)
      utimensat(AT_FDCWD, rec, NULL, 0);
    free(rec);
  }
}
