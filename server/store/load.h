/* load.h — the store's start-up loading (store.c, store_keep.c,
 * store_team.c): each loader reads one table on the writer connection,
 * before serving, and calls back once per row. Private to server/. */
#ifndef CAIRN_SERVER_STORE_LOAD_H
#define CAIRN_SERVER_STORE_LOAD_H

#include "server/store/store.h"

/* ---- start-up loading (writer connection, before serving) ---- */
/* Each loader calls cb once per row; a non-zero return from cb stops with CAIRN_EINTERNAL. */
int cairn__store_meta_get(cairn__store *s, const char *key, char *out, size_t outlen);

typedef struct cairn__store_volunteer_row {
  int64_t id;
  const char *name, *cluster, *apps_json, *token_hash, *peer_url; /* peer_url may be NULL */
  int slots, banned, quarantined; /* banned: 2 while its ban is pending */
  int64_t allocations, created;
  const char *team;                        /* NULL: none (0012_credit.sql) */
  double credit, cpu_seconds;              /* its totals (0012_credit.sql) */
  int64_t credited;
  int64_t trust;                           /* 0011_trust.sql */
  int64_t account;                         /* its account (0: none; 0024_accounts.sql) */
  double expavg, expavg_time;              /* its averaged credit (0024_accounts.sql) */
} cairn__store_volunteer_row;
cairn_status cairn__store_load_volunteers(cairn__store *s,
                                         int (*cb)(void *, const cairn__store_volunteer_row *),
                                         void *ud, cairn_error *err);

typedef struct cairn__store_job_row {
  int64_t id;
  const char *name, *app, *policy, *state;
  int replication, quorum, lease_seconds, max_attempts;
  int64_t created, finished, priority;
  const char *validator; /* compact JSON */
  int adaptive;          /* 0011_trust.sql */
  int keep_workers;      /* its outputs stay on workers (0016_kept_outputs.sql) */
  const char *app_version; /* its pinned app version, or NULL (0023_app_versions.sql) */
} cairn__store_job_row; /* state: "running", "done", "failed", "cancelled", "deleting",
                          "purging" or "deleted" */
/* An unreplicated accepted result in volunteer vol's ring, its seq-th
 * (0011_trust.sql; the row of slot seq % 32 is replaced). */
typedef struct cairn__store_trust_row {
  int64_t vol, seq, job, task_key, round, idx;
} cairn__store_trust_row;
/* Rows in (volunteer, seq) order. */
cairn_status cairn__store_load_trust(cairn__store *s, int (*cb)(void *, const cairn__store_trust_row *),
                                    void *ud, cairn_error *err);
cairn_status cairn__store_load_jobs(cairn__store *s, int (*cb)(void *, const cairn__store_job_row *),
                                   void *ud, cairn_error *err);

typedef struct cairn__store_job_file_row {
  int64_t job;
  int seq, broadcast;
  const char *name, *sha256;
  int64_t size;
} cairn__store_job_file_row;
cairn_status cairn__store_load_job_files(cairn__store *s,
                                        int (*cb)(void *, const cairn__store_job_file_row *),
                                        void *ud, cairn_error *err);

typedef struct cairn__store_task_row {
  int64_t key, job, accepted, round;
  uint32_t seq;
  int attempts;
  const char *name, *args_json, *inputs_json, *state;
  const char *run_json; /* NULL: none */
} cairn__store_task_row;
/* Rows in (job, seq) order. */
cairn_status cairn__store_load_tasks(cairn__store *s, int (*cb)(void *, const cairn__store_task_row *),
                                    void *ud, cairn_error *err);

typedef struct cairn__store_edge_row {
  int64_t task, parent;
  uint32_t pos;
} cairn__store_edge_row;
cairn_status cairn__store_load_parents(cairn__store *s, int (*cb)(void *, const cairn__store_edge_row *),
                                      void *ud, cairn_error *err);

typedef struct cairn__store_alloc_row {
  int64_t idx, volunteer, t, task, issued, expires;
  const char *state;
  int exit_status;
  const char *digest, *outcome; /* "" when no result was received */
  const void *output;  /* kept for a non-exact validator (validate.h), else NULL */
  size_t output_len;
  const char *files_key; /* its output files as validate.h hashes them ("" for none) */
  double cpu_seconds;    /* the result's claim, -1 when none (0012_credit.sql) */
  double credit;         /* the credit granted to it (0 unless valid) */
  const char *team;      /* the team its credit counts for (NULL: none; 0018) */
} cairn__store_alloc_row;
/* Every allocation of each task's current round, with its result if any, by index. */
cairn_status cairn__store_load_allocs(cairn__store *s, int (*cb)(void *, const cairn__store_alloc_row *),
                                     void *ud, cairn_error *err);

typedef struct cairn__store_file_row {
  const char *sha256;
  int64_t size;
} cairn__store_file_row;
cairn_status cairn__store_load_files(cairn__store *s, int (*cb)(void *, const cairn__store_file_row *),
                                    void *ud, cairn_error *err);

/* Per volunteer: results by outcome (valid, invalid, pending, error). */
typedef struct cairn__store_outcome_row {
  int64_t volunteer;
  const char *outcome;
  int64_t count;
} cairn__store_outcome_row;
cairn_status cairn__store_load_outcomes(cairn__store *s,
                                       int (*cb)(void *, const cairn__store_outcome_row *), void *ud,
                                       cairn_error *err);

/* Who holds which file since when, by file and then since. */
typedef struct cairn__store_holder_row {
  const char *sha256;
  int64_t volunteer, since;
} cairn__store_holder_row;
cairn_status cairn__store_load_holders(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_holder_row *), void *ud,
                                      cairn_error *err);

/* Resources (schema 0007): a task's request (id = task key; only requests
 * other than the default are stored) or a volunteer's offer (id =
 * volunteer id; upsert). */
typedef struct cairn__store_res_row {
  int64_t id, cores, memory_mib, disk_mib;
} cairn__store_res_row;
cairn_status cairn__store_task_resources_insert(cairn__store *s, const cairn__store_res_row *r,
                                               cairn_error *err);
cairn_status cairn__store_volunteer_offer(cairn__store *s, const cairn__store_res_row *r,
                                         cairn_error *err);
cairn_status cairn__store_load_task_resources(cairn__store *s,
                                             int (*cb)(void *, const cairn__store_res_row *),
                                             void *ud, cairn_error *err);
cairn_status cairn__store_load_offers(cairn__store *s,
                                     int (*cb)(void *, const cairn__store_res_row *), void *ud,
                                     cairn_error *err);

/* The measured link rates. */
typedef struct cairn__store_rate_row {
  const char *src, *dst;
  int64_t bytes_per_second, samples;
} cairn__store_rate_row;
cairn_status cairn__store_load_rates(cairn__store *s,
                                    int (*cb)(void *, const cairn__store_rate_row *), void *ud,
                                    cairn_error *err);

typedef struct cairn__store_task_io_row {
  int64_t task;
  const char *outputs_json, *parent_files_json;
} cairn__store_task_io_row;
cairn_status cairn__store_load_task_io(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_task_io_row *),
                                      void *ud, cairn_error *err);
struct cairn__store_output_row;
/* The output files of every done task's accepted result (row.key: the task key). */
cairn_status cairn__store_load_accepted_files(cairn__store *s,
                                             int (*cb)(void *, const struct cairn__store_output_row *),
                                             void *ud, cairn_error *err);

#endif
