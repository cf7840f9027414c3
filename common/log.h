/* log.h — leveled logging to stderr, one line per event. */
#ifndef CAIRN_LOG_H
#define CAIRN_LOG_H

typedef enum { CAIRN_LOG_ERROR, CAIRN_LOG_WARN, CAIRN_LOG_INFO, CAIRN_LOG_DEBUG } cairn_log_level;

void cairn_log_set_level(cairn_log_level l);
/* Parses "error|warn|info|debug"; returns -1 on anything else. */
int cairn_log_parse_level(const char *s, cairn_log_level *out);
void cairn_log(cairn_log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CAIRN_ERR(...) cairn_log(CAIRN_LOG_ERROR, __VA_ARGS__)
#define CAIRN_WARN(...) cairn_log(CAIRN_LOG_WARN, __VA_ARGS__)
#define CAIRN_INFO(...) cairn_log(CAIRN_LOG_INFO, __VA_ARGS__)
#define CAIRN_DEBUG(...) cairn_log(CAIRN_LOG_DEBUG, __VA_ARGS__)

#endif
