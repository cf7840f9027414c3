/* enforce.h — the worker's means of holding a task to its limits (docs/
 * worker.md, "Limits"): a cgroup v2 with memory.max when the worker can
 * create one (else the runner sets RLIMIT_AS), the size of a task
 * directory, a process's peak address space, and the peak resident memory
 * of a task's processes (its measurement, docs/worker.md "Measurements"). Private to worker/; the
 * runner (runner.c) uses them while it watches a program.
 */
#ifndef CAIRN_ENFORCE_H
#define CAIRN_ENFORCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A task's memory cgroup: DIR (under the worker's own cgroup v2) with
 * memory.max set; procs_fd is DIR/cgroup.procs open for writing (the child
 * writes "0" to it to move itself in). procs_fd < 0: none. */
typedef struct cairn__memcg {
  int procs_fd;
  char dir[512];
} cairn__memcg;

/* Creates cgroup NAME with memory.max = bytes (and no swap) under the
 * worker's cgroup v2. 0 on success; -1 when that is not possible here, with
 * why (a short phrase) filled, and m->procs_fd = -1. */
int cairn__memcg_create(cairn__memcg *m, const char *name, uint64_t bytes, char *why,
                        size_t whylen);
/* 1 when the kernel killed a process of m for memory (memory.events). */
int cairn__memcg_oom_killed(const cairn__memcg *m);
/* The largest memory m's processes held at once, in bytes (memory.peak,
 * Linux 5.19); 0 when unknown. */
uint64_t cairn__memcg_peak(const cairn__memcg *m);
/* Kills what is left in m, removes it, closes procs_fd. Safe on none. */
void cairn__memcg_destroy(cairn__memcg *m);

/* Bytes allocated under dir (st_blocks, not following links), counting at
 * most max_entries entries and 64 levels (then the sum so far). */
uint64_t cairn__dir_usage(const char *dir, size_t max_entries);

/* VmPeak of process pid in bytes (0 when unknown, e.g. it has exited). */
uint64_t cairn__vm_peak(pid_t pid);
/* The largest VmPeak of pid and its descendants down to 4 generations
 * (/proc/PID/task/PID/children: bwrap, its PID 1, the program and what
 * the program started), at most 64 processes read; 0 when unknown. */
uint64_t cairn__vm_peak_tree(pid_t pid);
/* The sum of the resident high-water marks (VmHWM) of pid and its
 * descendants, walked as cairn__vm_peak_tree walks them; 0 when unknown.
 * The peak of each process, not of the tree at one instant: at most the
 * sum of the peaks. */
uint64_t cairn__rss_peak_tree(pid_t pid);
/* This process's own resident high-water mark (VmHWM), in bytes. A child's
 * ru_maxrss (wait4) is at least its parent's resident size when it forked
 * or exec'd (Linux counts the memory it left), so a child's ru_maxrss up
 * to this value may be the worker's rather than the child's. */
uint64_t cairn__self_rss_peak(void);

#endif
