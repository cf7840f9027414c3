/* statsexport.c — BOINC-format XML statistics for statistics sites
 * (docs/project.md, "Statistics exports"; docs/protocol.md, "Statistics
 * files"): the exporter thread that makes the files on a schedule and
 * when the admin asks (POST /v1/stats/export), the export's state (GET
 * /v1/stats/export) and the files themselves (GET and HEAD of
 * /stats/tables.xml, /stats/user.gz, /stats/team.gz, /stats/host.gz).
 *
 * The files are never built for a request. The exporter thread runs one
 * export at a time (server/store/xmlstats.h: a read-only connection of its
 * own, one snapshot, rows streamed to gzip, O(1) memory in the population,
 * temporary files renamed into place); it never takes c->lock and never
 * waits for the writer. A request for a file opens it and hands its
 * descriptor to the HTTP layer: O(1) here, the bytes sent from the file;
 * an export renaming a new file meanwhile leaves the opened one whole.
 *
 * Schedule: every cfg.stats_export_hours (default 24) after the last
 * export, the first no sooner than min(interval, 60 s) after the start,
 * and no sooner than the interval after the files found in the folder
 * were made (a restart does not export again). A failed export is tried
 * again after min(interval, 10 min). An export asked for while one runs
 * runs after it; asks meanwhile are one.
 *
 * Locking: se->lock guards the fields below it, taken alone (never with
 * c->lock or any other), never held during an export or a request's file
 * work. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/api/api.h"
#include "server/store/xmlstats.h"

#define FIRST_DELAY_SECONDS 60
#define RETRY_SECONDS 600

struct cairn__statsexport {
  cairn_master *m;
  char *dir;                   /* the files' folder (malloc'd) */
  double every;                /* seconds between scheduled exports; 0: only when asked */
  atomic_int cancel;           /* stop: an export under way ends early */
  pthread_t thread;
  pthread_mutex_t lock;        /* everything below */
  pthread_cond_t cond;         /* the exporter: asked or stop */
  int asked, running, stop;
  int64_t due;                 /* Unix s of the next scheduled export; 0: none */
  uint64_t started, ended;     /* exports begun and ended (the number of each: its order) */
  uint64_t ok_seq, err_seq;    /* the last that succeeded, the last that failed (0: none) */
  uint64_t failures;           /* exports that failed */
  cairn__xmlstats_summary last; /* of export ok_seq */
  cairn_error err;             /* of export err_seq */
};

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first scheduled export (at the start): the interval after the
 * files in the folder were made, at least min(interval, 60 s) from now. */
static int64_t first_due(const struct cairn__statsexport *se) {
  if (se->every <= 0)
    return 0;
  double now = wall(), soon = now + fmin(se->every, FIRST_DELAY_SECONDS), due = soon;
  char path[4200];
  struct stat sb;
  snprintf(path, sizeof path, "%s/tables.xml", se->dir);
  if (stat(path, &sb) == 0)
    due = fmax(soon, (double)sb.st_mtime + se->every);
  return (int64_t)ceil(due);
}

/* Waits under se->lock until asked, due or stop: at most a minute at a
 * time, so that a change of the wall clock is seen. */
static void wait_turn(struct cairn__statsexport *se) {
  double left = se->due > 0 ? (double)se->due - wall() : 60;
  if (left <= 0)
    return;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  double step = fmin(left, 60);
  until.tv_sec += (time_t)step;
  until.tv_nsec += (long)((step - floor(step)) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&se->cond, &se->lock, &until);
}

static void log_end(struct cairn__statsexport *se, uint64_t seq, cairn_status st,
                    const cairn__xmlstats_summary *s, const cairn_error *err) {
  if (st == CAIRN_OK)
    CAIRN_INFO(&se->m->log, "statistics export %llu: %lld users, %lld teams, %lld hosts in "
               "%.3f s (%s)", (unsigned long long)seq, (long long)s->users, (long long)s->teams,
               (long long)s->hosts, s->seconds, se->dir);
  else if (!atomic_load(&se->cancel)) /* not the master stopping */
    CAIRN_WARN(&se->m->log, "statistics export %llu failed: %s", (unsigned long long)seq,
               err->text);
}

/* The exporter: one export each time it is asked or due, until stop. */
static void *exporter(void *arg) {
  struct cairn__statsexport *se = arg;
  pthread_mutex_lock(&se->lock);
  while (!se->stop) {
    if (!se->asked && !(se->due > 0 && wall() >= (double)se->due)) {
      wait_turn(se);
      continue;
    }
    se->asked = 0;
    se->running = 1;
    uint64_t seq = ++se->started;
    pthread_mutex_unlock(&se->lock);
    cairn__xmlstats_summary sum;
    cairn_error err = {0};
    cairn_status st = cairn__xmlstats_export(se->m->db_path, se->dir, &se->cancel, &sum, &err);
    log_end(se, seq, st, &sum, &err);
    pthread_mutex_lock(&se->lock);
    se->running = 0;
    se->ended = seq;
    if (st == CAIRN_OK) {
      se->ok_seq = seq;
      se->last = sum;
    } else {
      se->err_seq = seq;
      se->err = err;
      se->failures++;
    }
    if (se->every > 0)
      se->due = (int64_t)ceil(wall() + (st == CAIRN_OK ? se->every : fmin(se->every, RETRY_SECONDS)));
    pthread_cond_broadcast(&se->cond);
  }
  pthread_mutex_unlock(&se->lock);
  return NULL;
}

cairn_status cairn__statsexport_start(cairn_master *m, cairn_error *err) {
  struct cairn__statsexport *se = calloc(1, sizeof *se);
  double h = m->cfg.stats_export_hours;
  if (se && m->cfg.stats_dir)
    se->dir = strdup(m->cfg.stats_dir);
  else if (se && asprintf(&se->dir, "%s.stats", m->db_path) < 0)
    se->dir = NULL;
  if (!se || !se->dir) {
    free(se);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  se->m = m;
  se->every = h < 0 ? 0 : (h > 0 ? h : CAIRN__STATS_EXPORT_HOURS) * 3600.0;
  se->due = first_due(se);
  pthread_mutex_init(&se->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&se->cond, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&se->thread, NULL, exporter, se)) {
    pthread_cond_destroy(&se->cond);
    pthread_mutex_destroy(&se->lock);
    free(se->dir);
    free(se);
    return cairn__error_set(err, CAIRN_EINTERNAL, "cannot start the statistics exporter");
  }
  m->statsexport = se;
  return CAIRN_OK;
}

void cairn__statsexport_stop(cairn_master *m) {
  struct cairn__statsexport *se = m->statsexport;
  if (!se)
    return;
  atomic_store(&se->cancel, 1); /* an export under way stops at its next row */
  pthread_mutex_lock(&se->lock);
  se->stop = 1;
  pthread_cond_broadcast(&se->cond);
  pthread_mutex_unlock(&se->lock);
  pthread_join(se->thread, NULL);
  pthread_cond_destroy(&se->cond);
  pthread_mutex_destroy(&se->lock);
  free(se->dir);
  free(se);
  m->statsexport = NULL;
}

/* POST /v1/stats/export (admin; body empty or {}): asks for an export;
 * 202 {"export": N, "running": bool}: export N, when it ended (GET
 * /v1/stats/export's "exports" >= N), holds everything committed before
 * this answer. O(1). */
void cairn__statsexport_post(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const none[] = {NULL};
  json_t *o = cairn__api_body(rq, none, 1, rs);
  if (!o)
    return;
  json_decref(o);
  struct cairn__statsexport *se = m->statsexport;
  if (!se)
    return cairn__api_failf(rs, CAIRN_EIO, "the statistics exporter is not running");
  pthread_mutex_lock(&se->lock);
  se->asked = 1;
  uint64_t n = se->started + 1; /* one under way began before this request */
  int running = se->running;
  pthread_cond_broadcast(&se->cond);
  pthread_mutex_unlock(&se->lock);
  cairn__api_json(rs, 202, json_pack("{s:I, s:b}", "export", (json_int_t)n, "running", running));
}

/* GET /v1/stats/export (admin): the exporter's state. O(1). */
void cairn__statsexport_status(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  (void)rq;
  struct cairn__statsexport *se = m->statsexport;
  if (!se)
    return cairn__api_failf(rs, CAIRN_EIO, "the statistics exporter is not running");
  pthread_mutex_lock(&se->lock);
  json_t *last = json_null(), *error = json_null(), *files = json_object();
  if (se->ok_seq) {
    for (int i = 0; files && i < CAIRN__XMLSTATS_NFILES; i++)
      json_object_set_new(files, cairn__xmlstats_files[i], json_integer((json_int_t)se->last.bytes[i]));
    last = json_pack("{s:I, s:I, s:f, s:I, s:I, s:I, s:f, s:O}", "export",
                     (json_int_t)se->ok_seq, "update_time", (json_int_t)se->last.update_time,
                     "seconds", se->last.seconds, "users", (json_int_t)se->last.users, "teams",
                     (json_int_t)se->last.teams, "hosts", (json_int_t)se->last.hosts,
                     "total_credit", se->last.total_credit, "bytes", files);
  }
  if (se->err_seq > se->ok_seq)
    error = json_pack("{s:I, s:s}", "export", (json_int_t)se->err_seq, "message", se->err.text);
  json_t *o = json_pack("{s:I, s:I, s:b, s:s, s:o, s:o, s:o, s:o}", "exports",
                        (json_int_t)se->ended, "asked", (json_int_t)(se->started + se->asked),
                        "running", se->running, "folder", se->dir, "every_hours",
                        se->every > 0 ? json_real(se->every / 3600.0) : json_null(), "next",
                        se->due > 0 ? json_integer((json_int_t)se->due) : json_null(), "last",
                        last, "error", error);
  pthread_mutex_unlock(&se->lock);
  json_decref(files);
  if (!o)
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  cairn__api_json(rs, 200, o);
}

/* The strong ETag of an opened file: its inode, size and change time. */
static void file_etag(const struct stat *sb, char out[20]) {
  uint64_t v[4] = {(uint64_t)sb->st_ino, (uint64_t)sb->st_size, (uint64_t)sb->st_mtim.tv_sec,
                   (uint64_t)sb->st_mtim.tv_nsec};
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < 4; i++)
    for (int b = 0; b < 8; b++)
      h = (h ^ ((v[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
  snprintf(out, 20, "\"%016llx\"", (unsigned long long)h);
}

/* GET and HEAD /stats/{file} (anyone): one of the files of the last
 * export, as it is: tables.xml as application/xml, the others as
 * application/gzip; 304 when If-None-Match names its ETag or
 * If-Modified-Since is not older than it. O(1): the HTTP layer sends it
 * from its descriptor. */
void cairn__statsfiles_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *name = rq->path + strlen("/stats/");
  int known = 0;
  for (int i = 0; i < CAIRN__XMLSTATS_NFILES; i++)
    known |= strcmp(name, cairn__xmlstats_files[i]) == 0;
  if (!known)
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no statistics file \"%.64s\": they are "
                            "tables.xml, user.gz, team.gz and host.gz", name);
  struct cairn__statsexport *se = m->statsexport;
  if (!se)
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "the statistics are not served here");
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", se->dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
    int e = fd < 0 ? errno : EINVAL;
    if (fd >= 0)
      close(fd);
    pthread_mutex_lock(&se->lock);
    int64_t due = se->due;
    pthread_mutex_unlock(&se->lock);
    if (e != ENOENT)
      return cairn__api_failf(rs, CAIRN_EIO, "the statistics file %s cannot be read", name);
    if (due > 0)
      return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no statistics exported yet: the first "
                              "export is due in %lld s (or when the admin asks, POST "
                              "/v1/stats/export)", (long long)fmax(0, (double)due - wall()));
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no statistics exported yet: they are made "
                            "when the admin asks (POST /v1/stats/export)");
  }
  file_etag(&sb, rs->etag);
  rs->last_modified = (int64_t)sb.st_mtime;
  rs->ctype = strcmp(name, "tables.xml") == 0 ? "application/xml" : "application/gzip";
  if ((rq->if_none_match && strstr(rq->if_none_match, rs->etag)) ||
      (!rq->if_none_match && rq->if_modified_since > 0 &&
       rq->if_modified_since >= (int64_t)sb.st_mtime)) {
    close(fd);
    rs->status = 304;
    return;
  }
  rs->status = 200;
  rs->fd = fd;
  rs->fd_size = (uint64_t)sb.st_size;
}

char *cairn__statsexport_metrics(cairn_master *m, char *buf, size_t *len) {
  struct cairn__statsexport *se = m->statsexport;
  uint64_t ok = 0, failed = 0;
  double at = 0, seconds = 0;
  if (se) {
    pthread_mutex_lock(&se->lock);
    failed = se->failures;
    ok = se->ended - se->failures;
    at = se->ok_seq ? (double)se->last.update_time : 0;
    seconds = se->ok_seq ? se->last.seconds : 0;
    pthread_mutex_unlock(&se->lock);
  }
  char line[900];
  int k = snprintf(line, sizeof line,
                   "# HELP cairn_stats_exports_total XML statistics exports ended, by result.\n"
                   "# TYPE cairn_stats_exports_total counter\n"
                   "cairn_stats_exports_total{result=\"ok\"} %llu\n"
                   "cairn_stats_exports_total{result=\"failed\"} %llu\n"
                   "# HELP cairn_stats_export_last_success_time Unix time of the snapshot of "
                   "the last XML statistics export that succeeded (0: none yet).\n"
                   "# TYPE cairn_stats_export_last_success_time gauge\n"
                   "cairn_stats_export_last_success_time %.0f\n"
                   "# HELP cairn_stats_export_last_seconds How long the last XML statistics "
                   "export that succeeded took.\n"
                   "# TYPE cairn_stats_export_last_seconds gauge\n"
                   "cairn_stats_export_last_seconds %.6f\n",
                   (unsigned long long)ok, (unsigned long long)failed, at, seconds);
  char *nb = buf && k > 0 && (size_t)k < sizeof line ? realloc(buf, *len + (size_t)k + 1) : NULL;
  if (!nb)
    return buf;
  memcpy(nb + *len, line, (size_t)k + 1);
  *len += (size_t)k;
  return nb;
}
