/* What a workload reports: labelled regions (counter/clock/rusage snapshots), labelled values
 * with their source, and free text (e.g. a copy of /proc/self/maps). Fixed-size, so it can live
 * in the worker without allocation and be read field by field through cffi. */
#ifndef PL_OUT_H
#define PL_OUT_H

#include "pl_region.h"

#define PL_LABEL_MAX 48
#define PL_NAME_MAX 32
#define PL_OUT_MAX_REGIONS 64  /* a region per variant and repetition is plenty */
#define PL_OUT_MAX_VALUES 1024 /* e.g. per-thread and per-size series */
#define PL_OUT_TEXT_MAX 65536  /* a /proc/PID/maps of a small process fits easily */
#define PL_OUT_NOTE_MAX 256

struct pl_out_region {
    char label[PL_LABEL_MAX];
    struct pl_snapshot begin, end;
    int err; /* -errno of a failed counter read, 0 if none */
};

struct pl_out_value {
    char label[PL_LABEL_MAX];
    char name[PL_NAME_MAX];
    double value;
    char unit[8];
    char source[8]; /* hw, sw, rusage, sim or clock */
};

struct pl_out {
    int nregions, nvalues, overflow; /* overflow: records dropped because a table was full */
    struct pl_out_region region[PL_OUT_MAX_REGIONS];
    struct pl_out_value value[PL_OUT_MAX_VALUES];
    char text[PL_OUT_TEXT_MAX];
    char note[PL_OUT_NOTE_MAX]; /* one sentence when the workload fails */
};

void pl_out_region(struct pl_out *o, const char *label, const struct pl_region *r);
void pl_out_value(struct pl_out *o, const char *label, const char *name, double value,
                  const char *unit, const char *source);
/* printf-style text appended to out->text (silently truncated when full: callers that care
 * check for their own end marker) */
void pl_out_printf(struct pl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* printf-style note; returns err so failures read `return pl_out_fail(o, -errno, "...")` */
int pl_out_fail(struct pl_out *o, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
