/* resume.h — the worker's side of the checkpoint contract (docs/worker.md,
 * "Checkpoints and progress"): tasks that outlive the worker's death, and
 * the progress their apps report. Private to worker/.
 *
 * Before a task's app starts, its slot records the task as offered (the
 * work offer's JSON) and its lease time in DIR/run/slot-<i>.task, next to
 * its directory (temporary file, fsync, rename, fsync of DIR/run); the
 * record's modification time is its lease's last renewal (the heartbeat
 * touches it). The record goes just before the directory is emptied. A
 * worker that stops while the app runs (not because its lease was lost)
 * keeps both.
 *
 * At start-up, on the same DIR: scan() keeps each slot-<i>.task of a slot
 * this worker has (i < slots), of an app it runs, whose lease has not run
 * out by the record's clock (last renewal + lease seconds), and the
 * directory slot-<i> next to it; it removes everything else in DIR/run.
 * confirm() asks the master which of them are still this volunteer's
 * (POST /v1/heartbeat naming them in "running": those it extends): the
 * others are dropped, records and directories removed. Slot i then takes
 * its task (take()) and runs it again in the same directory with
 * CAIRN_RESUMED=1, under the same lease and index.
 *
 * Progress: a program writes a fraction (0 to 1, as text) to the file
 * CAIRN__PROGRESS_NAME in its directory ($CAIRN_PROGRESS_FILE); a callback
 * calls cairn_task_progress(). progress() reads the files of the running
 * programs (at most PROGRESS_READ_MAX bytes each, a strict decimal number
 * from 0 to 1, anything else ignored: the last good value stays) and
 * returns the value of each running task that reported one, for the
 * heartbeat's "progress".
 *
 * Ownership: the worker owns one cairn__resume (w->resume), set up by
 * run() before its threads start and destroyed after they end. Entry i is
 * written by slot i's thread (record, forget, take) and by callbacks run by
 * it (set_progress); the heartbeat thread reads every entry (progress,
 * renewed). Each call takes mu, a leaf lock; progress() reads the files
 * outside it.
 */
#ifndef CAIRN_RESUME_H
#define CAIRN_RESUME_H

#include <pthread.h>
#include <stddef.h>

#include "common/error.h"
#include "common/log.h"
#include "common/protocol.h"
#include "worker/task.h"

/* The progress file's name in a task directory: a dot file, which no
 * output pattern's wildcard matches (and outputs.c never uploads). */
#define CAIRN__PROGRESS_NAME ".cairn-progress"

typedef struct cairn__resume_slot {
  cairn__task *pending;  /* the recorded task to run again (scan, confirm), until taken */
  long long index;       /* the running task's index while it has a record (-1: none) */
  long long lease_seconds;
  char *progress_path;   /* its program's progress file (NULL: a callback, or none) */
  double progress;       /* its last good value, -1: none */
} cairn__resume_slot;

typedef struct cairn__resume {
  pthread_mutex_t mu;
  char *run_dir;         /* DIR/run */
  size_t slots;
  cairn__resume_slot *s; /* slots entries */
  const cairn__logger *log; /* borrowed */
} cairn__resume;

/* Sets r up for slots slots under run_dir (copied). 0, or -1 out of memory. */
int cairn__resume_init(cairn__resume *r, const char *run_dir, size_t slots,
                       const cairn__logger *log);
/* Frees everything (a task not taken is freed, its record stays). Accepts
 * a zeroed struct. */
void cairn__resume_destroy(cairn__resume *r);

/* At start-up (no thread running): keeps the records worth asking about
 * (above; app_ok(ud, name) says whether the worker runs app name) as
 * pending tasks and removes everything else in run_dir. Returns how many
 * are pending; CAIRN_EIO (err) when run_dir cannot be read or cleaned. */
cairn_status cairn__resume_scan(cairn__resume *r, int (*app_ok)(void *ud, const char *app),
                                void *ud, size_t *pending, cairn_error *err);
/* The indices of the pending tasks (at most max) into out; how many. */
size_t cairn__resume_pending(cairn__resume *r, int64_t *out, size_t max);
/* The master extended extended[0..n): the pending tasks among them stay
 * (their records touched), the others are dropped (logged) with their
 * records and directories. extended NULL: every pending task is dropped. */
void cairn__resume_confirm(cairn__resume *r, const long long *extended, size_t n);
/* No answer (the worker stops first): the pending tasks are forgotten,
 * their records and directories kept for the next start. */
void cairn__resume_defer(cairn__resume *r);
/* Slot i's pending task (caller owns it; t->resumed is set), or NULL. */
cairn__task *cairn__resume_take(cairn__resume *r, size_t slot);

/* Records t (whose offer it holds) for slot i, whose directory is dir,
 * before its app starts; program: its progress comes from dir's progress
 * file. A failure is logged (the task runs, but would not survive). */
void cairn__resume_record(cairn__resume *r, size_t slot, const cairn__task *t, const char *dir,
                          int program);
/* 1 when slot i has a record (its task is running, or was kept). */
int cairn__resume_recorded(cairn__resume *r, size_t slot);
/* Slot i's task ends: its record is removed. */
void cairn__resume_forget(cairn__resume *r, size_t slot);
/* Slot i's task stops with the worker: its record and directory stay. */
void cairn__resume_keep(cairn__resume *r, size_t slot);

/* A callback's report (0 to 1, else CAIRN_EINVAL). */
cairn_status cairn__resume_set_progress(cairn__resume *r, size_t slot, double fraction);
/* The heartbeat's "progress": each recorded running task's last good value
 * (program files read now), at most max. */
size_t cairn__resume_progress(cairn__resume *r, cairn__report_progress *out, size_t max);
/* The master extended extended[0..n): the records of those leases are
 * touched (their lease time starts again now). */
void cairn__resume_renewed(cairn__resume *r, const long long *extended, size_t n);

/* Reads a progress value from text of len bytes: optional blanks, a
 * decimal number (digits, one '.', no sign, exponent, hex, inf or nan),
 * optional blanks and newline; from 0 to 1. -1 for anything else. Pure. */
double cairn__progress_parse(const char *text, size_t len);

#endif
