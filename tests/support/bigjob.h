/* bigjob.h — a broadcast job of one big input on real cairn-workers, for the
 * integration tests of copies between workers (test_cut_through,
 * test_resume): the input's bytes, the job file, workers started in a
 * cluster, and what their logs, caches and the job's tasks say.
 *
 * Every function asserts (cmocka) on what it cannot do; none keeps state. */
#ifndef CAIRN_TESTS_BIGJOB_H
#define CAIRN_TESTS_BIGJOB_H

#include <stddef.h>
#include <sys/types.h>

/* size pseudo-random bytes drawn from seed (malloc'd; the caller frees;
 * NULL when out of memory). */
unsigned char *bigjob_data(size_t size, unsigned seed);

/* Writes DIR/big.bin (data) and DIR/job.json: job `name` of n tasks that
 * print the input's digest, then hold their worker until DIR/gate/go exists (at
 * most 120 s), so that each worker takes one task; sha gets the file's
 * digest. */
void bigjob_write(const char *dir, const char *name, const unsigned char *data, size_t size,
                  int n, char sha[65]);
/* Lets the tasks of bigjob_write end (writes DIR/gate/go). */
void bigjob_release(const char *dir);

/* Starts worker NAME (folder DIR/NAME, log DIR/NAME.log) in cluster
 * `cluster`, one slot, app sum=/bin/sh, the given --stall-timeout, its
 * download capped at limit KiB/s when limit is not NULL. */
pid_t bigjob_worker(const char *url, const char *dir, const char *name, const char *cluster,
                    const char *stall, const char *limit);

/* 1 when a line of worker name's log holds text; that line into out (when
 * out is not NULL; "" when none). */
int bigjob_log_line(const char *dir, const char *name, const char *text, char *out, size_t len);
/* Waits up to timeout seconds for text in worker name's log. */
int bigjob_await_log(const char *dir, const char *name, const char *text, double timeout);
/* Waits up to timeout seconds until worker name's cache holds sha. */
int bigjob_await_cached(const char *dir, const char *name, const char *sha, double timeout);

/* Kills pid with SIGKILL and asserts it died of it (30 s at most). */
void bigjob_kill9(pid_t pid);
/* A fake file server's read of a request's head from socket fd into req
 * (len bytes, NUL-terminated; what came before the peer stopped sending). */
void bigjob_read_head(int fd, char *req, size_t len);

/* Every one of job's n tasks is done with sha as its output. */
void bigjob_check_outputs(const char *url, long long job, int n, const char *sha);

#endif
