/* states.c — GET /v1/jobs/{id}/states (admin): the state of every task of
 * a job as one letter each, in job-file order, for the dashboard's task
 * grid (docs/dashboard.md): about one byte per task where
 * GET /v1/jobs/{id}/tasks sends a hundred or more.
 *
 * The letters are copied CAIRN__STATES_CHUNK tasks per hold of c->lock
 * (each hold O(chunk), never O(job)); each chunk is consistent, the whole
 * string is not one instant. A job's task keys are consecutive in
 * job-file order (jobs.c gives them in one hold), so "first_key" + i is
 * task i's key. The answer waits for the journal group of the last chunk
 * read, like every read of the core.
 */
#include <stdlib.h>

#include "server/core/core.h"
#include "server/api/api.h"

#define CAIRN__STATES_CHUNK 4096

static const char letter[TS_COUNT] = {'w', 'e', 'r', 'd', 'f'};

void cairn__states_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = cairn__api_job_id(rq, rs);
  if (id < 0)
    return;
  cairn__core *c = m->core;
  char *s = NULL;
  int64_t first = 0;
  uint64_t seq = 0;
  for (uint32_t i = 0, n = 1; n > 0; i += n) {
    pthread_mutex_lock(&c->lock);
    const mjob *j = id >= 1 && (size_t)id <= c->njobs ? c->jobs[id - 1] : NULL;
    if (!j) { /* unknown, or deleted since the first chunk */
      cairn__core_unlock(c);
      free(s);
      return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no job %lld", (long long)id);
    }
    if (!s) {
      s = malloc((size_t)j->ntasks + 1);
      if (!s) {
        cairn__core_unlock(c);
        return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
      }
      first = j->ntasks ? j->tasks[0].key : 0;
    }
    n = j->ntasks - i < CAIRN__STATES_CHUNK ? j->ntasks - i : CAIRN__STATES_CHUNK;
    for (uint32_t k = 0; k < n; k++)
      s[i + k] = letter[j->tasks[i + k].state];
    s[i + n] = '\0';
    seq = cairn__journal_last(c->journal);
    cairn__core_unlock(c);
  }
  cairn__journal_wait(c->journal, seq, NULL);
  json_t *o = json_pack("{sI sI ss}", "job", (json_int_t)id, "first_key", (json_int_t)first,
                        "states", s);
  free(s);
  if (!o)
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  cairn__api_json(rs, 200, o);
}
