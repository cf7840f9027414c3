/* store_xmlstats.c — the XML statistics export (xmlstats.h): three
 * streaming queries on a read-only connection of its own, each row
 * written by common/xmlstats.c into a gzip stream (zlib) on a temporary
 * file, then tables.xml, then the renames.
 *
 * Bounds: O(1) memory in the population (one row at a time; SQLite's page
 * cache of its connection, 2 MiB by default; zlib's state and a 64 KiB
 * buffer a file); the applications' names are the one set held, by
 * SQLite's UNION, O(distinct names). Time: O(accounts + teams + hosts +
 * jobs) rows, each looked up by primary key; gzip at zlib's default level
 * is most of it (bench/statsexport.sh). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/xmlstats.h"
#include "server/store/xmlstats.h"

const char *const cairn__xmlstats_files[CAIRN__XMLSTATS_NFILES] = {"user.gz", "team.gz",
                                                                   "host.gz", "tables.xml"};
enum { F_USER, F_TEAM, F_HOST, F_TABLES };

/* A temporary file older than this in the folder is a crashed export's:
 * the next export removes it. No export takes nearly this long. */
#define STALE_SECONDS 3600

static const char USERS_SQL[] =
  "SELECT id, name, created, credit, expavg_credit, expavg_time, cross_project_id, email_key, "
  "country, coalesce(team_id, 0) FROM accounts WHERE credit > 0 ORDER BY id";
static const char TEAMS_SQL[] =
  "SELECT t.id, t.name, t.founder, t.created, t.url, t.description, t.country, c.credit, "
  "coalesce(e.expavg_credit, 0), coalesce(e.expavg_time, 0), f.name FROM teams t "
  "JOIN team_credit c ON c.team = t.key LEFT JOIN team_expavg e ON e.team = t.key "
  "LEFT JOIN accounts f ON f.id = t.founder WHERE c.credit > 0 ORDER BY t.id";
/* A host's platform is the "@PLATFORM" entry of its apps (a worker of
 * signed apps, server/core/apps.h); its os_name the platform's first
 * part ("linux" of "linux-x86_64"). */
static const char HOSTS_SQL[] =
  "SELECT v.id, v.created, coalesce(v.account_id, 0), v.credit, v.expavg_credit, "
  "v.expavg_time, v.host_cpid, coalesce(a.email_key, ''), coalesce(o.cores, v.slots), "
  "coalesce(o.memory_mib, 0), coalesce(o.disk_mib, 0), CASE WHEN json_valid(v.apps) THEN "
  "(SELECT substr(j.value, 2) FROM json_each(v.apps) j WHERE j.value LIKE '@%' LIMIT 1) END "
  "FROM volunteers v LEFT JOIN accounts a ON a.id = v.account_id LEFT JOIN volunteer_offers o "
  "ON o.volunteer_id = v.id WHERE v.credit > 0 AND v.banned = 0 ORDER BY v.id";
static const char APPS_SQL[] = "SELECT app FROM jobs UNION SELECT name FROM app_versions ORDER BY 1";

/* One file being written: its temporary and final paths, and the stream. */
typedef struct outf {
  char tmp[4200], path[4200];
  int fd;          /* the temporary file; -1: none */
  gzFile gz;       /* the .gz files' stream, on a copy of fd */
  FILE *f;         /* tables.xml's stream, on a copy of fd */
} outf;

typedef struct xctx {
  sqlite3 *db;
  const atomic_int *cancel; /* non-zero: stop at the next row (NULL: never) */
  outf out[CAIRN__XMLSTATS_NFILES];
  cairn__xmlstats_summary *sum;
  cairn_error *err;
} xctx;

static int gz_sink(void *ud, const char *p, size_t n) {
  return n == 0 || gzwrite((gzFile)ud, p, (unsigned)n) == (int)n ? 0 : -1;
}

static int file_sink(void *ud, const char *p, size_t n) {
  return fwrite(p, 1, n, (FILE *)ud) == n ? 0 : -1;
}

static const char *text(sqlite3_stmt *st, int col) {
  const char *s = (const char *)sqlite3_column_text(st, col);
  return s ? s : "";
}

/* Makes file i's temporary file and its stream. */
static cairn_status open_out(xctx *x, const char *dir, int i) {
  outf *o = &x->out[i];
  snprintf(o->path, sizeof o->path, "%s/%s", dir, cairn__xmlstats_files[i]);
  snprintf(o->tmp, sizeof o->tmp, "%s/.%s.XXXXXX", dir, cairn__xmlstats_files[i]);
  if ((o->fd = mkstemp(o->tmp)) < 0)
    return cairn__error_set(x->err, CAIRN_EIO, "cannot create a file in %s: %s", dir,
                           strerror(errno));
  fchmod(o->fd, 0644); /* public data: a web server may serve the folder */
  int copy = dup(o->fd);
  if (i == F_TABLES)
    o->f = copy >= 0 ? fdopen(copy, "w") : NULL;
  else if (copy >= 0 && (o->gz = gzdopen(copy, "wb")))
    gzbuffer(o->gz, 1 << 16);
  if (!o->f && !o->gz) {
    if (copy >= 0)
      close(copy);
    return cairn__error_set(x->err, CAIRN_ENOMEM, "cannot start writing %s", o->tmp);
  }
  return CAIRN_OK;
}

/* Ends file i's stream and flushes it to disk; its size into the summary. */
static cairn_status close_out(xctx *x, int i) {
  outf *o = &x->out[i];
  errno = 0;
  int bad = o->gz ? gzclose(o->gz) != Z_OK : fclose(o->f) != 0;
  o->gz = NULL;
  o->f = NULL;
  struct stat sb;
  if (bad || fsync(o->fd) || fstat(o->fd, &sb))
    return cairn__error_set(x->err, CAIRN_EIO, "cannot write %s: %s", o->tmp,
                           errno ? strerror(errno) : "write failed");
  x->sum->bytes[i] = (uint64_t)sb.st_size;
  return CAIRN_OK;
}

static cairn_status query_failed(xctx *x, const char *what) {
  return cairn__error_set(x->err, CAIRN_EIO, "reading the %s: %s", what, sqlite3_errmsg(x->db));
}

static cairn_status write_failed(xctx *x, int i) {
  return cairn__error_set(x->err, CAIRN_EIO, "cannot write %s: %s", x->out[i].tmp,
                         errno ? strerror(errno) : "write failed");
}

/* Streams the rows of sql into file i as records of tag: row(x, st, gz)
 * writes one (0, or -1 when the stream failed). */
static cairn_status stream(xctx *x, int i, const char *tag, const char *what, const char *sql,
                           int (*row)(xctx *, sqlite3_stmt *, gzFile)) {
  sqlite3_stmt *st = NULL;
  gzFile gz = x->out[i].gz;
  if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) != SQLITE_OK)
    return query_failed(x, what);
  errno = 0;
  if (cairn__xs_open(gz_sink, gz, tag)) {
    sqlite3_finalize(st);
    return write_failed(x, i);
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (x->cancel && atomic_load_explicit(x->cancel, memory_order_relaxed)) {
      sqlite3_finalize(st);
      return cairn__error_set(x->err, CAIRN_ETIMEOUT, "the export was cancelled");
    }
    if (row(x, st, gz)) {
      sqlite3_finalize(st);
      return write_failed(x, i);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return query_failed(x, what);
  return cairn__xs_close(gz_sink, gz, tag) ? write_failed(x, i) : CAIRN_OK;
}

static int user_row(xctx *x, sqlite3_stmt *st, gzFile gz) {
  cairn__xs_user u = {
    .id = sqlite3_column_int64(st, 0), .name = text(st, 1),
    .create_time = sqlite3_column_int64(st, 2), .total_credit = sqlite3_column_double(st, 3),
    .expavg_credit = sqlite3_column_double(st, 4), .expavg_time = sqlite3_column_double(st, 5),
    .cross_project_id = text(st, 6), .email = text(st, 7), .country = text(st, 8),
    .teamid = sqlite3_column_int64(st, 9)};
  x->sum->users++;
  return cairn__xs_user_write(gz_sink, gz, &u);
}

static int team_row(xctx *x, sqlite3_stmt *st, gzFile gz) {
  cairn__xs_team t = {
    .id = sqlite3_column_int64(st, 0), .name = text(st, 1), .founder = sqlite3_column_int64(st, 2),
    .create_time = sqlite3_column_int64(st, 3), .url = text(st, 4), .description = text(st, 5),
    .country = text(st, 6), .total_credit = sqlite3_column_double(st, 7),
    .expavg_credit = sqlite3_column_double(st, 8), .expavg_time = sqlite3_column_double(st, 9),
    .founder_name = (const char *)sqlite3_column_text(st, 10)};
  x->sum->teams++;
  return cairn__xs_team_write(gz_sink, gz, &t);
}

static int host_row(xctx *x, sqlite3_stmt *st, gzFile gz) {
  char os[64];
  snprintf(os, sizeof os, "%s", text(st, 11));
  os[strcspn(os, "-")] = '\0';
  cairn__xs_host h = {
    .id = sqlite3_column_int64(st, 0), .create_time = sqlite3_column_int64(st, 1),
    .userid = sqlite3_column_int64(st, 2), .total_credit = sqlite3_column_double(st, 3),
    .expavg_credit = sqlite3_column_double(st, 4), .expavg_time = sqlite3_column_double(st, 5),
    .host_cpid = text(st, 6), .email = text(st, 7), .ncpus = sqlite3_column_int64(st, 8),
    .m_nbytes = (double)sqlite3_column_int64(st, 9) * 1048576.0,
    .d_total = (double)sqlite3_column_int64(st, 10) * 1048576.0, .os_name = os};
  x->sum->hosts++;
  x->sum->total_credit += h.total_credit;
  return cairn__xs_host_write(gz_sink, gz, &h);
}

/* tables.xml: the counts of the three files, then the applications. */
static cairn_status write_tables(xctx *x) {
  FILE *f = x->out[F_TABLES].f;
  cairn__xs_tables t = {.update_time = x->sum->update_time, .nusers = x->sum->users,
                        .nteams = x->sum->teams, .nhosts = x->sum->hosts,
                        .total_credit = x->sum->total_credit};
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(x->db, APPS_SQL, -1, &st, NULL) != SQLITE_OK)
    return query_failed(x, "applications");
  int bad = cairn__xs_tables_head(file_sink, f, &t), rc = SQLITE_DONE;
  while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW)
    bad = cairn__xs_tables_app(file_sink, f, text(st, 0));
  sqlite3_finalize(st);
  if (bad || cairn__xs_tables_end(file_sink, f))
    return write_failed(x, F_TABLES);
  return rc == SQLITE_DONE ? CAIRN_OK : query_failed(x, "applications");
}

/* The schema the queries read: accounts (0024), teams (0025), host cpids (0027). */
static cairn_status check_schema(xctx *x, const char *db_path) {
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (sqlite3_prepare_v2(x->db, "SELECT count(*) FROM schema_migrations WHERE version IN "
                                "(24, 25, 27)", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (n < 0)
    return cairn__error_set(x->err, CAIRN_EIO, "%s is not a Cairn database: %s", db_path,
                           sqlite3_errmsg(x->db));
  if (n != 3)
    return cairn__error_set(x->err, CAIRN_EINVAL, "%s lacks the schema of accounts, teams and "
                           "host cpids (0024, 0025, 0027): start this version's cairn-server on "
                           "it once", db_path);
  return CAIRN_OK;
}

/* Everything between the snapshot's start and the renames. */
static cairn_status export_files(xctx *x, const char *db_path, const char *dir) {
  cairn_status st = check_schema(x, db_path);
  for (int i = 0; st == CAIRN_OK && i < CAIRN__XMLSTATS_NFILES; i++)
    st = open_out(x, dir, i);
  if (st == CAIRN_OK)
    st = stream(x, F_USER, "users", "accounts", USERS_SQL, user_row);
  if (st == CAIRN_OK)
    st = stream(x, F_TEAM, "teams", "teams", TEAMS_SQL, team_row);
  if (st == CAIRN_OK)
    st = stream(x, F_HOST, "hosts", "hosts", HOSTS_SQL, host_row);
  if (st == CAIRN_OK)
    st = write_tables(x);
  for (int i = 0; st == CAIRN_OK && i < CAIRN__XMLSTATS_NFILES; i++)
    st = close_out(x, i);
  return st;
}

/* Removes the temporary files crashed exports left in dir (older than
 * STALE_SECONDS: a running export's are younger). */
static void remove_stale(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  time_t now = time(NULL);
  while (d && (e = readdir(d))) {
    int ours = 0;
    for (int i = 0; i < CAIRN__XMLSTATS_NFILES; i++) {
      size_t n = strlen(cairn__xmlstats_files[i]);
      ours |= e->d_name[0] == '.' && !strncmp(e->d_name + 1, cairn__xmlstats_files[i], n) &&
              e->d_name[n + 1] == '.';
    }
    struct stat sb;
    if (ours && !fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
        S_ISREG(sb.st_mode) && now - sb.st_mtime > STALE_SECONDS)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  if (d)
    closedir(d);
}

static double mono_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

cairn_status cairn__xmlstats_export(const char *db_path, const char *dir, const atomic_int *cancel,
                                   cairn__xmlstats_summary *out, cairn_error *err) {
  double t0 = mono_seconds();
  *out = (cairn__xmlstats_summary){.update_time = (int64_t)time(NULL)};
  xctx x = {.sum = out, .err = err, .cancel = cancel};
  for (int i = 0; i < CAIRN__XMLSTATS_NFILES; i++)
    x.out[i].fd = -1;
  if (mkdir(dir, 0755) && errno != EEXIST)
    return cairn__error_set(err, CAIRN_EIO, "cannot make the folder %s: %s", dir,
                           strerror(errno));
  remove_stale(dir);
  cairn_status st = CAIRN_OK;
  if (sqlite3_open_v2(db_path, &x.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
    st = cairn__error_set(err, CAIRN_EIO, "cannot open the database %s: %s", db_path,
                          x.db ? sqlite3_errmsg(x.db) : "out of memory");
  if (st == CAIRN_OK) {
    sqlite3_busy_timeout(x.db, 5000);
    sqlite3_exec(x.db, "BEGIN", NULL, NULL, NULL); /* one snapshot for every file */
    st = export_files(&x, db_path, dir);
    sqlite3_exec(x.db, "COMMIT", NULL, NULL, NULL);
  }
  sqlite3_close(x.db);
  for (int i = 0; i < CAIRN__XMLSTATS_NFILES; i++) { /* a failure's streams */
    if (x.out[i].gz)
      gzclose(x.out[i].gz);
    if (x.out[i].f)
      fclose(x.out[i].f);
  }
  for (int i = 0; st == CAIRN_OK && i < CAIRN__XMLSTATS_NFILES; i++) /* tables.xml last */
    if (rename(x.out[i].tmp, x.out[i].path))
      st = cairn__error_set(err, CAIRN_EIO, "cannot rename %s to %s: %s", x.out[i].tmp,
                            x.out[i].path, strerror(errno));
  for (int i = 0; i < CAIRN__XMLSTATS_NFILES; i++) {
    if (x.out[i].fd >= 0) {
      if (st != CAIRN_OK)
        unlink(x.out[i].tmp); /* gone already when renamed */
      close(x.out[i].fd);
    }
  }
  int dfd = st == CAIRN_OK ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dfd >= 0) { /* the renames themselves on disk */
    fsync(dfd);
    close(dfd);
  }
  out->seconds = mono_seconds() - t0;
  return st;
}
