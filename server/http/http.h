/* The HTTP transport (http.c): the libmicrohttpd daemon that reads requests,
 * decides each one's lane (inline, held, slow, streamed) and hands it to the
 * API's handlers (server/api/). The handle (server/master.c) starts it after
 * the core and stops it before. */
#ifndef CAIRN_SERVER_HTTP_H
#define CAIRN_SERVER_HTTP_H

#include "server/api/api.h"

cairn_status cairn__http_start(cairn_master *m, cairn_error *err);
void cairn__http_stop(cairn_master *m);

#endif
