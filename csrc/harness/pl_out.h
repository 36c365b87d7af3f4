/* What a workload reports, as typed records only: labelled regions (counter/clock/rusage
 * snapshots), labelled values with their source, and labelled facts that are not measurements
 * (a path, a name, an errno, an address: a number or a text). Fixed-size, so it can live in the
 * worker without allocation and be read field by field through cffi; no text is parsed on the
 * Python side except what the experiment is about (a copy of /proc/self/maps). */
#ifndef PL_OUT_H
#define PL_OUT_H

#include <stdint.h>

#include "pl_region.h"

#define PL_LABEL_MAX 48
#define PL_NAME_MAX 32
#define PL_OUT_MAX_REGIONS 64  /* a region per variant and repetition is plenty */
#define PL_OUT_MAX_VALUES 1024 /* e.g. per-thread and per-size series */
#define PL_OUT_MAX_FACTS 256   /* maps: ~30 objects; ebizzy: 3 per fault site */
#define PL_OUT_TEXT_MAX 65536  /* the text facts: a small process's /proc/PID/maps fits */
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

#define PL_FACT_NUMBER 0
#define PL_FACT_TEXT 1

struct pl_out_fact {
    char label[PL_LABEL_MAX];
    char name[PL_NAME_MAX];
    int kind;        /* PL_FACT_NUMBER or PL_FACT_TEXT */
    uint64_t number; /* PL_FACT_NUMBER: e.g. an address, an errno, a flag word */
    uint32_t text;   /* PL_FACT_TEXT: offset of its NUL-terminated string in out->text */
};

struct pl_out {
    int nregions, nvalues, nfacts;
    int overflow; /* records dropped because a table was full */
    struct pl_out_region region[PL_OUT_MAX_REGIONS];
    struct pl_out_value value[PL_OUT_MAX_VALUES];
    struct pl_out_fact fact[PL_OUT_MAX_FACTS];
    uint32_t text_used;
    char text[PL_OUT_TEXT_MAX]; /* the strings of the text facts, one after another */
    char note[PL_OUT_NOTE_MAX]; /* one sentence when the workload fails */
};

void pl_out_region(struct pl_out *o, const char *label, const struct pl_region *r);
void pl_out_value(struct pl_out *o, const char *label, const char *name, double value,
                  const char *unit, const char *source);
void pl_out_number(struct pl_out *o, const char *label, const char *name, uint64_t number);
/* A printf-style text fact; one that does not fit whole is dropped (and sets overflow). */
void pl_out_text(struct pl_out *o, const char *label, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* printf-style note; returns err so failures read `return pl_out_fail(o, -errno, "...")` */
int pl_out_fail(struct pl_out *o, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
