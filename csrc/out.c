#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pl_out.h"

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

void pl_out_region(struct pl_out *o, const char *label, const struct pl_region *r)
{
    if (o->nregions >= PL_OUT_MAX_REGIONS) {
        o->overflow = 1;
        return;
    }
    struct pl_out_region *d = &o->region[o->nregions++];
    copy(d->label, sizeof d->label, label);
    d->begin = r->begin;
    d->end = r->end;
    d->err = r->err;
}

void pl_out_value(struct pl_out *o, const char *label, const char *name, double value,
                  const char *unit, const char *source)
{
    if (o->nvalues >= PL_OUT_MAX_VALUES) {
        o->overflow = 1;
        return;
    }
    struct pl_out_value *d = &o->value[o->nvalues++];
    copy(d->label, sizeof d->label, label);
    copy(d->name, sizeof d->name, name);
    d->value = value;
    copy(d->unit, sizeof d->unit, unit);
    copy(d->source, sizeof d->source, source);
}

void pl_out_printf(struct pl_out *o, const char *fmt, ...)
{
    size_t used = strlen(o->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->text + used, sizeof o->text - used, fmt, ap);
    va_end(ap);
}

int pl_out_fail(struct pl_out *o, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->note, sizeof o->note, fmt, ap);
    va_end(ap);
    return err;
}
