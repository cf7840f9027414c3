/* fuzz_plan_json.c — libFuzzer target: the plan and instance JSON reader
 * (plan/plan_json.c). The input is an instance, optionally followed by a
 * NUL byte and a plan for it: the instance is parsed and validated, then
 * the plan read against it; an accepted plan is written out and read back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, 0, size);
  size_t ilen = nul ? (size_t)(nul - text) : size;
  cairn__plan_instance in;
  cairn_error err = {0};
  if (cairn__plan_instance_parse(text, ilen, &in, &err) != CAIRN_OK) {
    if (!err.text[0])
      abort(); /* a refusal names its problem */
    return 0;
  }
  if (cairn__plan_instance_validate(&in, &err) == CAIRN_OK && nul) {
    cairn__plan_schedule s;
    if (cairn__plan_schedule_parse(nul + 1, size - ilen - 1, &in, &s, &err) == CAIRN_OK) {
      char *json = cairn__plan_schedule_to_json(&s, &in);
      cairn__plan_schedule back;
      if (json && cairn__plan_schedule_parse(json, strlen(json), &in, &back, &err) != CAIRN_OK)
        abort(); /* what the writer wrote, the reader reads */
      if (json)
        cairn__plan_schedule_free(&back);
      free(json);
    }
    cairn__plan_schedule_free(&s);
  }
  cairn__plan_instance_free(&in);
  return 0;
}
