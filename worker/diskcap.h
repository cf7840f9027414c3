/* diskcap.h — --max-disk (docs/worker.md, "Volunteers in control"): the
 * worker's input cache (DIR/cache) and task directories (DIR/run) stay
 * under a cap. Before a task's directory is prepared the worker admits it:
 * what is on disk now (both directories summed, at most
 * CAIRN__DISKCAP_SCAN_ENTRIES entries each) plus what tasks admitted but
 * still being prepared will add, plus this task's need — each input's size
 * once for its copy in the task directory and once more when it is not
 * cached yet, and its disk request — must fit the cap. When it does not,
 * cached files the task does not name are removed, least recently modified
 * first, until it does; when even that is not enough the task is refused.
 * Private to worker/.
 */
#ifndef CAIRN_DISKCAP_H
#define CAIRN_DISKCAP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"
#include "common/log.h"
#include "worker/task.h"

#define CAIRN__DISKCAP_SCAN_ENTRIES 100000u
#define CAIRN__DISKCAP_EVICT_MAX 4096u  /* cached files looked at for eviction */

/* One cached file that may be evicted. */
typedef struct cairn__cached_file {
  char name[72];
  uint64_t bytes;
  time_t mtime;
} cairn__cached_file;

/* Orders files least recently modified first (ties by name) and returns how
 * many of the first ones must go to free at least over bytes; n when all of
 * them are not enough. */
size_t cairn__diskcap_plan(cairn__cached_file *files, size_t n, uint64_t over);

/* The bytes task t will add: its inputs' copies, the inputs not yet in
 * cache_dir once more, its disk request. Unknown sizes count 0. */
uint64_t cairn__diskcap_need(const cairn__task *t, const char *cache_dir);

typedef struct cairn__diskcap {
  uint64_t cap;        /* bytes; 0: no cap */
  const char *cache_dir, *run_dir; /* borrowed */
  const cairn__logger *log;          /* borrowed */
  pthread_mutex_t mu;  /* one admission at a time */
  uint64_t pending;    /* needs of tasks admitted, not yet prepared */
} cairn__diskcap;

void cairn__diskcap_init(cairn__diskcap *d, uint64_t cap_mib, const char *cache_dir,
                         const char *run_dir, const cairn__logger *log);
void cairn__diskcap_destroy(cairn__diskcap *d);
/* Admits t (evicting cached files when needed): 0 with *need set (give it
 * back with cairn__diskcap_prepared once the task directory is filled), or
 * -1 with err saying why it cannot fit. Always 0 without a cap. */
int cairn__diskcap_admit(cairn__diskcap *d, const cairn__task *t, uint64_t *need,
                         cairn_error *err);
void cairn__diskcap_prepared(cairn__diskcap *d, uint64_t need);

#endif
