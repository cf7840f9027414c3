/* sandbox.h — the sandbox a program app's task runs in on Linux (docs/
 * security.md, "The task sandbox"; docs/worker.md, "Sandbox"): bubblewrap
 * (bwrap) starts the program in its own mount, PID, IPC, UTS and cgroup
 * namespaces, and its own network namespace (only loopback) unless the
 * task asks for the network and the volunteer allows it; with no
 * capabilities and no new privileges (PR_SET_NO_NEW_PRIVS: a setuid binary
 * gains nothing); killed when the worker goes.
 *
 * The file system it sees: the system's programs and libraries read-only
 * (/usr, and /bin, /sbin, /lib* as the host has them: a directory bound
 * read-only or a symlink made again), a short list of /etc files (the
 * dynamic loader's cache, alternatives, passwd and group, name service, time
 * zone, TLS certificates), its own /proc, a minimal /dev, a private /tmp
 * (tmpfs; the rest of its root is read-only), the volunteer's --sandbox-bind
 * directories, the read-only binds the caller names (the app's program file,
 * its directory), and its task directory read-write, each at its own path so
 * that the paths the worker passes in arguments and environment stay valid.
 * Nothing else: not the worker's DIR (credentials, cache, other slots), not
 * $HOME.
 *
 * PID 1 of the sandbox is a shell (CAIRN__SANDBOX_REAPER_SCRIPT) that runs
 * the program as PID 2 with the same descriptors, waits for it and exits
 * with its status (128+N for a death by signal N), its own messages going
 * to /dev/null. bwrap's own PID 1 would tell bwrap of the program's exit
 * and be left unwaited, so the program's CPU time and peak memory would
 * not reach the runner's wait4; and the program itself as PID 1 (bwrap's
 * --as-pid-1 alone) would ignore the signals it sends itself (abort, kill
 * of its own pid). When PID 1 exits, all left in the sandbox is killed.
 *
 * The program stays in the worker's session, in the process group the
 * runner makes for it (so the runner's stop, continue and kill of the
 * group reach bwrap and all in the sandbox). A session of its own (setsid,
 * bwrap's --new-session) would also be a scheduler autogroup of its own,
 * weighing as much as the volunteer's whole desktop session. What a new
 * session guards against, TIOCSTI into the worker's terminal, is held off
 * otherwise: the program holds no descriptor of a terminal (the runner
 * closes all but 0, 1, 2, none a terminal) and /dev/tty in the sandbox is
 * /dev/null.
 *
 * cairn__sandbox_argv is pure (a unit test checks it); cairn__sandbox_host
 * reads the host's layout; cairn__sandbox_probe runs bwrap once. Private to
 * worker/; the runner (runner.c) execs the argv in place of the program.
 */
#ifndef CAIRN_SANDBOX_H
#define CAIRN_SANDBOX_H

#include <stddef.h>

#define CAIRN__BWRAP_PATH "/usr/bin/bwrap"
/* Directories the volunteer may expose (--sandbox-bind), and read-only
 * binds one run may add. */
#define CAIRN__SANDBOX_MAX_BINDS 16u
#define CAIRN__SANDBOX_MAX_RO    8u
/* The sandbox's PID 1 and its script: $0 is the program, "$@" its
 * arguments; the program gets the shell's standard error back (fd 3) and
 * nothing more. */
#define CAIRN__SANDBOX_REAPER "/bin/sh"
#define CAIRN__SANDBOX_REAPER_SCRIPT \
  "exec 3>&2 2>/dev/null; (exec \"$0\" \"$@\" 2>&3 3>&-); exit $?"
/* Top-level system entries (/usr, /bin, /lib64, ...) the host layout holds. */
#define CAIRN__SANDBOX_SYS_MAX   12u

/* A directory of the volunteer's, bound at its own path. */
typedef struct cairn__sandbox_bind {
  const char *path;   /* absolute; borrowed */
  int rw;             /* 1: read-write ("PATH:rw"), 0: read-only */
} cairn__sandbox_bind;

/* One top-level system entry of the host: bound read-only, or made again
 * as the same symlink (/bin -> usr/bin). */
typedef struct cairn__sandbox_sys {
  char path[32];      /* "/usr", "/bin", ... */
  char link[128];     /* the symlink's target, "" for a directory */
} cairn__sandbox_sys;

/* The worker's sandbox settings, shared read-only by every slot. */
typedef struct cairn__sandbox {
  const char *bwrap;                     /* bwrap's path (CAIRN__BWRAP_PATH) */
  cairn__sandbox_sys sys[CAIRN__SANDBOX_SYS_MAX];
  size_t nsys;
  const cairn__sandbox_bind *binds;      /* nbinds, borrowed (the worker's) */
  size_t nbinds;
  int allow_network;                     /* the volunteer passed --allow-network */
} cairn__sandbox;

/* What one run adds: its directory, program, read-only binds, arguments. */
typedef struct cairn__sandbox_task {
  const char *dir;                       /* task directory: read-write, the cwd */
  const char *program;                   /* absolute; bound read-only unless under
                                            a system directory */
  const char *const *ro;                 /* nro paths bound read-only (the app's
                                            directory, ...), at most
                                            CAIRN__SANDBOX_MAX_RO */
  size_t nro;
  const char *const *args;               /* nargs arguments after the program */
  size_t nargs;
  int network;                           /* the task asked for the network */
} cairn__sandbox_task;

/* Fills sb->sys from the host: each of /usr, /bin, /sbin, /lib, /lib32,
 * /lib64, /libx32 that exists, as a directory or a symlink. Sets bwrap to
 * CAIRN__BWRAP_PATH and leaves the binds and allow_network alone. */
void cairn__sandbox_host(cairn__sandbox *sb);

/* 1 when the run keeps the host's network: the task asked and the
 * volunteer allows it. */
int cairn__sandbox_network(const cairn__sandbox *sb, const cairn__sandbox_task *t);

/* The bwrap command line running t in sb: a new NULL-terminated array
 * (caller frees the array only) of string literals and the callers'
 * strings, argv[0] = sb->bwrap; NULL when out of memory or when t has more
 * than CAIRN__SANDBOX_MAX_RO read-only binds. Pure. */
const char **cairn__sandbox_argv(const cairn__sandbox *sb, const cairn__sandbox_task *t);

/* Runs /bin/true in sb once, with the namespaces every task gets, from
 * directory dir (bound as a task directory). 0 when it ran; -1 with why
 * filled (bwrap's own message, or why bwrap could not start) otherwise. */
int cairn__sandbox_probe(const cairn__sandbox *sb, const char *dir, char *why, size_t cap);

#endif
