/* editdist.h — shared steps of the end-to-end tests (see editdist.c). */
#ifndef CAIRN_TEST_EDITDIST_H
#define CAIRN_TEST_EDITDIST_H

#include <jansson.h>
#include <sys/types.h>

#include "tests/support/harness.h"

extern char e2e_bin_app[4096], e2e_bin_cli[4096];

/* Finds the binaries and sets CAIRN_ADMIN_TOKEN for the CLI. */
void e2e_init(void);
/* Writes DIR/strings.txt (n and m letters) and DIR/job.json (blocks of bs). */
void e2e_make_job(const char *dir, int n, int m, int bs);
/* cairn submit DIR/job.json; returns the job id. */
long long e2e_submit(const char *url, const char *dir);
/* Starts cairn-worker wI (harness_worker: state in DIR/wI, log DIR/wI.log)
 * with --app appspec and --exit-when-idle idle. */
pid_t e2e_worker(const char *url, const char *dir, int i, const char *appspec, const char *idle);
/* GET /v1/jobs/{job} (NULL on failure) and one of its counts. */
json_t *e2e_job(const char *url, long long job);
long e2e_count(json_t *job, const char *state);
/* Waits until the job is no longer running: "done", "failed" or "timeout". */
const char *e2e_wait(const char *url, long long job, double timeout);
/* Compares every block's bottom row with the full table: returns the number
 * of wrong blocks; with strict, fails the test at the first one. */
int e2e_check_results(const char *url, long long job, const char *dir, int bs, int ntasks,
                      int strict);

#endif
