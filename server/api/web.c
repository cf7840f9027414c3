/* web.c — the dashboard's files (GET and HEAD of any path outside /v1/,
 * routes.c): read from the folder given by --web (m->web_dir), never from
 * above it; a path ending in '/' is its index.html. Called by
 * cairn__api_handle, on a failed master too. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/api/api.h"

static const char *mime(const char *path) {
  const char *dot = strrchr(path, '.');
  if (!dot)
    return "application/octet-stream";
  if (!strcmp(dot, ".html"))
    return "text/html; charset=utf-8";
  if (!strcmp(dot, ".js"))
    return "text/javascript";
  if (!strcmp(dot, ".css"))
    return "text/css";
  if (!strcmp(dot, ".svg"))
    return "image/svg+xml";
  if (!strcmp(dot, ".json"))
    return "application/json";
  return "application/octet-stream";
}

void cairn__web_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *url = rq->path;
  if (!m->web_dir || strstr(url, ".."))
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no dashboard is served here");
  char path[4200];
  snprintf(path, sizeof path, "%s%s%s", m->web_dir, url,
           url[strlen(url) - 1] == '/' ? "index.html" : "");
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no such page");
  }
  rs->status = 200;
  rs->fd = fd;
  rs->fd_size = (uint64_t)st.st_size;
  rs->ctype = mime(path);
}
