/* The named perf events pagelab knows: the single list, read by Python through the cffi lib. */
#ifndef PL_EVENTS_H
#define PL_EVENTS_H

#include <stdint.h>

struct pl_event_def {
    const char *name; /* spelled as perf(1) spells it */
    uint32_t type;    /* PERF_TYPE_* */
    uint64_t config;
    const char *unit; /* "" for plain counts */
};

extern const struct pl_event_def pl_event_table[];
extern const int pl_event_count;

#endif
