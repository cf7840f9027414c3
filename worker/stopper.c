/* stopper.c — drain/stop flags with self-pipes for waking sleepers. */
#include "worker/stopper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

int cairn__stopper_init(cairn__stopper *s) {
  atomic_init(&s->draining, 0);
  atomic_init(&s->stopping, 0);
  s->drain_pipe[0] = s->drain_pipe[1] = -1;
  s->stop_pipe[0] = s->stop_pipe[1] = -1;
  if (pipe2(s->drain_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return -1;
  if (pipe2(s->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    cairn__stopper_destroy(s);
    return -1;
  }
  return 0;
}

void cairn__stopper_destroy(cairn__stopper *s) {
  for (int i = 0; i < 2; i++) {
    if (s->drain_pipe[i] >= 0)
      close(s->drain_pipe[i]);
    if (s->stop_pipe[i] >= 0)
      close(s->stop_pipe[i]);
    s->drain_pipe[i] = s->stop_pipe[i] = -1;
  }
}

static void poke(int fd) {
  char c = 1;
  int saved = errno;
  /* A full pipe is already readable: EAGAIN is fine. */
  if (write(fd, &c, 1) < 0)
    errno = saved;
  errno = saved;
}

void cairn__stopper_drain(cairn__stopper *s) {
  if (atomic_exchange(&s->draining, 1) == 0)
    poke(s->drain_pipe[1]);
}

void cairn__stopper_stop(cairn__stopper *s) {
  if (atomic_exchange(&s->stopping, 1) == 0)
    poke(s->stop_pipe[1]);
  cairn__stopper_drain(s);
}

int cairn__stopper_draining(const cairn__stopper *s) { return atomic_load(&s->draining); }
int cairn__stopper_stopping(const cairn__stopper *s) { return atomic_load(&s->stopping); }
int cairn__stopper_stop_fd(const cairn__stopper *s) { return s->stop_pipe[0]; }

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits on the read ends of the given pipes until one is readable or ms pass. */
static int wait_fds(const int *fds, int n, long ms) {
  struct pollfd p[2];
  for (int i = 0; i < n; i++) {
    p[i].fd = fds[i];
    p[i].events = POLLIN;
  }
  long long end = now_ms() + (ms > 0 ? ms : 0);
  for (;;) {
    long long left = end - now_ms();
    if (left < 0)
      left = 0;
    int r = poll(p, (nfds_t)n, (int)left);
    if (r > 0)
      return 1;
    if (r == 0)
      return 0;
    if (errno != EINTR)
      return 0;
  }
}

int cairn__stopper_sleep(cairn__stopper *s, long ms) {
  int fds[2] = {s->drain_pipe[0], s->stop_pipe[0]};
  if (cairn__stopper_draining(s))
    return 1;
  return wait_fds(fds, 2, ms) || cairn__stopper_draining(s);
}

int cairn__stopper_sleep_until_stop(cairn__stopper *s, long ms) {
  int fd = s->stop_pipe[0];
  if (cairn__stopper_stopping(s))
    return 1;
  return wait_fds(&fd, 1, ms) || cairn__stopper_stopping(s);
}

int cairn__cancelled(const cairn__cancel *c) {
  return cairn__stopper_stopping(c->stopper) || (c->lost && atomic_load(c->lost)) ||
         (c->up && cairn__cancelled(c->up));
}

int cairn__cancel_sleep(const cairn__cancel *c, long ms) {
  /* Lease loss has no pipe: look at it every 100 ms. */
  while (ms > 0 && !cairn__cancelled(c)) {
    long step = ms < 100 ? ms : 100;
    if (cairn__stopper_sleep_until_stop(c->stopper, step))
      return 1;
    ms -= step;
  }
  return cairn__cancelled(c);
}
