/* store_sizing.c — the store's side of tasks that size themselves
 * (store_sizing.h): the records' payloads and how each is written, the
 * deletion steps, the loads at start-up and the task views' two reads. Its
 * statements are its own (zst[], store_int.h), each prepared on its first
 * use: the writer's by the thread that owns the writer (start-up, then the
 * commit thread), the reader's under the reader's lock. */
#include "server/store/store_sizing.h"
#include "server/store/store_int.h"

#include <stdlib.h>
#include <string.h>

enum zstmt {
  Z_TASK_PUT, Z_GROW, Z_PEAK, Z_USAGE, Z_DEL_TASKS, Z_DEL_PEAKS, /* writes */
  Z_LOAD_TASKS, Z_LOAD_PEAKS,                                    /* start-up */
  Z_TASK_USAGE, Z_JOB_USAGE,                                     /* reader */
  Z_COUNT
};
_Static_assert(Z_COUNT <= CAIRN__STORE_SIZING_STMTS, "store_int.h: room for the statements");

#define USAGE_COLS "r.memory_bytes, r.disk_bytes, r.wall_seconds, r.cpu_seconds, " \
                   "r.sized_memory_mib, r.sized_disk_mib, r.retry_mib "
static const char *const zsql[Z_COUNT] = {
  [Z_TASK_PUT] = "INSERT INTO task_sizing(task_id, flags, category) VALUES (?1, ?2, ?3)",
  [Z_GROW] = "UPDATE task_sizing SET grow_memory_mib = ?2, grow_disk_mib = ?3 WHERE task_id = ?1",
  [Z_PEAK] = "INSERT INTO category_peaks(job_id, category, memory_mib, disk_mib, cpu_ratio) "
             "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(job_id, category) DO UPDATE SET "
             "memory_mib = excluded.memory_mib, disk_mib = excluded.disk_mib, "
             "cpu_ratio = excluded.cpu_ratio",
  [Z_USAGE] = "UPDATE results SET memory_bytes = ?2, disk_bytes = ?3, wall_seconds = ?4, "
              "sized_memory_mib = ?5, sized_disk_mib = ?6, retry_mib = ?7 WHERE idx = ?1",
  [Z_DEL_TASKS] = "DELETE FROM task_sizing WHERE task_id >= ?1 AND task_id < ?2",
  [Z_DEL_PEAKS] = "DELETE FROM category_peaks WHERE job_id = ?1",
  [Z_LOAD_TASKS] = "SELECT z.task_id, z.flags, z.category, z.grow_memory_mib, z.grow_disk_mib "
                   "FROM task_sizing z JOIN tasks t ON t.id = z.task_id "
                   "JOIN jobs jb ON jb.id = t.job_id AND (jb.ended IS NULL OR "
                   "jb.ended = 'cancelled') ORDER BY z.task_id",
  [Z_LOAD_PEAKS] = "SELECT p.job_id, p.category, p.memory_mib, p.disk_mib, p.cpu_ratio "
                   "FROM category_peaks p JOIN jobs jb ON jb.id = p.job_id AND "
                   "(jb.ended IS NULL OR jb.ended = 'cancelled') ORDER BY p.job_id",
  [Z_TASK_USAGE] = "SELECT r.idx, " USAGE_COLS "FROM results r WHERE r.task_id = ?1 AND "
                   "(r.memory_bytes IS NOT NULL OR r.disk_bytes IS NOT NULL OR "
                   "r.wall_seconds IS NOT NULL OR r.sized_memory_mib IS NOT NULL OR "
                   "r.sized_disk_mib IS NOT NULL OR r.retry_mib IS NOT NULL)",
  [Z_JOB_USAGE] = "SELECT t.seq, " USAGE_COLS "FROM tasks t JOIN results r ON r.idx = t.accepted "
                  "WHERE t.job_id = ?1 AND t.seq >= ?2 AND t.seq < ?3 ORDER BY t.seq",
};

/* Statement id, prepared on its connection when first used: NULL with err
 * set when it cannot be. */
static sqlite3_stmt *stmt(cairn__store *s, enum zstmt id, cairn_error *err) {
  return cairn__store_prepared(s, id >= Z_TASK_USAGE ? s->r : s->w, &s->zst[id], zsql[id], err);
}

/* Runs writer statement q to completion and resets it. */
static cairn_status done(cairn__store *s, sqlite3_stmt *q, enum zstmt id, cairn_error *err) {
  return cairn__store_done(s, q, zsql[id], err);
}

/* ---- records ---- */

typedef enum { ZR_TASKS, ZR_GROW, ZR_PEAK, ZR_USAGE } zrkind;

struct cairn__zrec {
  zrkind kind;
  int64_t n[7];   /* tasks: first key; grow: key, memory, disk; peak: job, memory, disk;
                     usage: idx, memory, disk, sized memory, sized disk, retry (< 0: NULL) */
  double x;       /* peak: CPU ratio; usage: wall seconds (< 0: NULL) */
  char *label;    /* peak: its category */
  uint32_t ntasks, nlabels; /* tasks: their positions, flags and labels */
  uint32_t *seq;
  uint8_t *flags, *cat;
  char **labels;
};

void cairn__zrec_free(struct cairn__zrec *p) {
  if (!p)
    return;
  free(p->label);
  for (uint32_t i = 0; p->labels && i < p->nlabels; i++)
    free(p->labels[i]);
  free(p->labels);
  free(p->seq);
  free(p->flags);
  free(p->cat);
  free(p);
}

void cairn__zrec_keys(struct cairn__zrec *p, int64_t first_key) {
  if (p && p->kind == ZR_TASKS)
    p->n[0] = first_key;
}

static struct cairn__zrec *zrec(zrkind kind) {
  struct cairn__zrec *p = calloc(1, sizeof *p);
  if (p)
    p->kind = kind;
  return p;
}

cairn__jrec *cairn__jrec_sizing_tasks(uint32_t n, const uint32_t *seq, const uint8_t *flags,
                                      const uint8_t *cat, const char *const *labels,
                                      uint32_t nlabels) {
  struct cairn__zrec *p = zrec(ZR_TASKS);
  if (!p)
    return NULL;
  p->ntasks = n;
  p->seq = malloc((n ? n : 1) * sizeof *p->seq);
  p->flags = malloc(n ? n : 1);
  p->cat = malloc(n ? n : 1);
  p->labels = calloc(nlabels ? nlabels : 1, sizeof *p->labels);
  int bad = !p->seq || !p->flags || !p->cat || !p->labels;
  for (uint32_t i = 0; !bad && i < nlabels; i++, p->nlabels++)
    bad = !(p->labels[i] = strdup(labels[i]));
  if (bad) {
    cairn__zrec_free(p);
    return NULL;
  }
  if (n) {
    memcpy(p->seq, seq, n * sizeof *seq);
    memcpy(p->flags, flags, n);
    memcpy(p->cat, cat, n);
  }
  return cairn__jrec_sizing(p);
}

cairn__jrec *cairn__jrec_sizing_grow(int64_t key, int64_t grow_mem, int64_t grow_disk) {
  struct cairn__zrec *p = zrec(ZR_GROW);
  if (!p)
    return NULL;
  p->n[0] = key;
  p->n[1] = grow_mem;
  p->n[2] = grow_disk;
  return cairn__jrec_sizing(p);
}

cairn__jrec *cairn__jrec_sizing_peak(int64_t job, const char *label, const cairn__peak *pk) {
  struct cairn__zrec *p = zrec(ZR_PEAK);
  if (!p || !(p->label = strdup(label))) {
    cairn__zrec_free(p);
    return NULL;
  }
  p->n[0] = job;
  p->n[1] = pk->memory_mib;
  p->n[2] = pk->disk_mib;
  p->x = pk->cpu_ratio;
  return cairn__jrec_sizing(p);
}

cairn__jrec *cairn__jrec_sizing_usage(int64_t idx, const cairn__usage *u, int64_t sized_mem,
                                      int64_t sized_disk, int64_t retry_mib) {
  struct cairn__zrec *p = zrec(ZR_USAGE);
  if (!p)
    return NULL;
  const int64_t n[7] = {idx, u->memory_bytes, u->disk_bytes, sized_mem, sized_disk, retry_mib, 0};
  memcpy(p->n, n, sizeof n);
  p->x = u->wall_seconds;
  return cairn__jrec_sizing(p);
}

/* Binds v to q's parameter at, or NULL when v < 0. */
static void bind_opt(sqlite3_stmt *q, int at, int64_t v) {
  if (v >= 0)
    sqlite3_bind_int64(q, at, v);
}

/* The task rows, one statement each: O(the job's sized tasks). */
static cairn_status apply_tasks(cairn__store *s, const struct cairn__zrec *p, cairn_error *err) {
  sqlite3_stmt *q = stmt(s, Z_TASK_PUT, err);
  cairn_status st = q ? CAIRN_OK : err->status;
  for (uint32_t i = 0; st == CAIRN_OK && i < p->ntasks; i++) {
    sqlite3_bind_int64(q, 1, p->n[0] + p->seq[i]);
    sqlite3_bind_int(q, 2, p->flags[i]);
    TXT(q, 3, p->cat[i] < p->nlabels ? p->labels[p->cat[i]] : "");
    st = done(s, q, Z_TASK_PUT, err);
  }
  return st;
}

cairn_status cairn__zrec_apply(cairn__store *s, const struct cairn__zrec *p, cairn_error *err) {
  static const enum zstmt of[] = {[ZR_GROW] = Z_GROW, [ZR_PEAK] = Z_PEAK, [ZR_USAGE] = Z_USAGE};
  if (p->kind == ZR_TASKS)
    return apply_tasks(s, p, err);
  enum zstmt id = of[p->kind];
  sqlite3_stmt *q = stmt(s, id, err);
  if (!q)
    return err->status;
  sqlite3_bind_int64(q, 1, p->n[0]);
  switch (p->kind) {
  case ZR_GROW:
    sqlite3_bind_int64(q, 2, p->n[1]);
    sqlite3_bind_int64(q, 3, p->n[2]);
    break;
  case ZR_PEAK:
    TXT(q, 2, p->label);
    sqlite3_bind_int64(q, 3, p->n[1]);
    sqlite3_bind_int64(q, 4, p->n[2]);
    sqlite3_bind_double(q, 5, p->x);
    break;
  case ZR_USAGE:
    bind_opt(q, 2, p->n[1]);
    bind_opt(q, 3, p->n[2]);
    if (p->x >= 0)
      sqlite3_bind_double(q, 4, p->x);
    bind_opt(q, 5, p->n[3]);
    bind_opt(q, 6, p->n[4]);
    bind_opt(q, 7, p->n[5]);
    break;
  case ZR_TASKS: break;
  }
  return done(s, q, id, err);
}

/* ---- a job's deletion ---- */

cairn_status cairn__store_sizing_delete_range(cairn__store *s, int64_t lo, int64_t hi,
                                             cairn_error *err) {
  sqlite3_stmt *q = stmt(s, Z_DEL_TASKS, err);
  if (!q)
    return err->status;
  sqlite3_bind_int64(q, 1, lo);
  sqlite3_bind_int64(q, 2, hi);
  return done(s, q, Z_DEL_TASKS, err);
}

cairn_status cairn__store_sizing_delete_job(cairn__store *s, int64_t job, cairn_error *err) {
  sqlite3_stmt *q = stmt(s, Z_DEL_PEAKS, err);
  if (!q)
    return err->status;
  sqlite3_bind_int64(q, 1, job);
  return done(s, q, Z_DEL_PEAKS, err);
}

/* ---- start-up and reads ---- */

/* cairn__store_each_row on statement id. */
static cairn_status each_row(cairn__store *s, sqlite3 *db, sqlite3_stmt *q, enum zstmt id,
                             int (*row)(sqlite3_stmt *, void *, void *), void *cb, void *ud,
                             const char *what, cairn_error *err) {
  return cairn__store_each_row(s, db, q, zsql[id], row, cb, ud, what, err);
}

static int tsize_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_tsize_row r = {.task = I64(0), .flags = (int)I64(1), .category = STR(2),
                             .grow_mem = I64(3), .grow_disk = I64(4)};
  int (*f)(void *, const cairn__store_tsize_row *) = cb;
  return !r.category || f(ud, &r);
}

cairn_status cairn__store_load_task_sizing(cairn__store *s,
                                          int (*cb)(void *, const cairn__store_tsize_row *),
                                          void *ud, cairn_error *err) {
  sqlite3_stmt *q = stmt(s, Z_LOAD_TASKS, err);
  return q ? each_row(s, s->w, q, Z_LOAD_TASKS, tsize_row, (void *)cb, ud, "the tasks' sizing",
                      err)
           : err->status;
}

static int peak_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_peak_row r = {.job = I64(0), .category = STR(1),
                            .peak = {.memory_mib = I64(2), .disk_mib = I64(3),
                                     .cpu_ratio = sqlite3_column_double(q, 4), .measured = 1}};
  int (*f)(void *, const cairn__store_peak_row *) = cb;
  return !r.category || f(ud, &r);
}

cairn_status cairn__store_load_peaks(cairn__store *s,
                                    int (*cb)(void *, const cairn__store_peak_row *), void *ud,
                                    cairn_error *err) {
  sqlite3_stmt *q = stmt(s, Z_LOAD_PEAKS, err);
  return q ? each_row(s, s->w, q, Z_LOAD_PEAKS, peak_row, (void *)cb, ud, "the categories' peaks",
                      err)
           : err->status;
}

/* Column c of q as an integer, -1 when NULL. */
static int64_t opt_i64(sqlite3_stmt *q, int c) {
  return sqlite3_column_type(q, c) == SQLITE_NULL ? -1 : I64(c);
}

static double opt_f64(sqlite3_stmt *q, int c) {
  return sqlite3_column_type(q, c) == SQLITE_NULL ? -1 : sqlite3_column_double(q, c);
}

static int usage_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_usage_row r = {.key = I64(0),
                             .usage = {opt_i64(q, 1), opt_i64(q, 2), opt_f64(q, 3)},
                             .cpu_seconds = opt_f64(q, 4), .sized_mem = opt_i64(q, 5),
                             .sized_disk = opt_i64(q, 6), .retry_mib = opt_i64(q, 7)};
  int (*f)(void *, const cairn__store_usage_row *) = cb;
  return f(ud, &r);
}

/* Reader statement id bound to its n (1 or 3) keys, its rows to cb. */
static cairn_status read_usage(cairn__store *s, enum zstmt id, const int64_t *keys, int n,
                               int (*cb)(void *, const cairn__store_usage_row *), void *ud,
                               cairn_error *err) {
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = stmt(s, id, err);
  cairn_status st = q ? CAIRN_OK : err->status;
  if (q) {
    for (int i = 0; i < n; i++)
      sqlite3_bind_int64(q, i + 1, keys[i]);
    st = each_row(s, s->r, q, id, usage_row, (void *)cb, ud, "measurements", err);
  }
  pthread_mutex_unlock(&s->rlock);
  return st;
}

cairn_status cairn__store_task_usage(cairn__store *s, int64_t key,
                                    int (*cb)(void *, const cairn__store_usage_row *), void *ud,
                                    cairn_error *err) {
  return read_usage(s, Z_TASK_USAGE, &key, 1, cb, ud, err);
}

cairn_status cairn__store_job_usage(cairn__store *s, int64_t job, int64_t from, int64_t to,
                                   int (*cb)(void *, const cairn__store_usage_row *), void *ud,
                                   cairn_error *err) {
  const int64_t keys[3] = {job, from, to};
  return read_usage(s, Z_JOB_USAGE, keys, 3, cb, ud, err);
}
