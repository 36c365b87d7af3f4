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

static struct pl_out_fact *fact(struct pl_out *o, const char *label, const char *name, int kind)
{
    if (o->nfacts >= PL_OUT_MAX_FACTS) {
        o->overflow = 1;
        return NULL;
    }
    struct pl_out_fact *d = &o->fact[o->nfacts];
    copy(d->label, sizeof d->label, label);
    copy(d->name, sizeof d->name, name);
    d->kind = kind;
    return d;
}

void pl_out_number(struct pl_out *o, const char *label, const char *name, uint64_t number)
{
    struct pl_out_fact *d = fact(o, label, name, PL_FACT_NUMBER);
    if (d) {
        d->number = number;
        o->nfacts++;
    }
}

void pl_out_text(struct pl_out *o, const char *label, const char *name, const char *fmt, ...)
{
    struct pl_out_fact *d = fact(o, label, name, PL_FACT_TEXT);
    if (!d)
        return;
    size_t room = sizeof o->text - o->text_used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->text + o->text_used, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) { /* a cut text would be a wrong one: drop it */
        o->text[o->text_used] = '\0';
        o->overflow = 1;
        return;
    }
    d->text = o->text_used;
    o->text_used += (uint32_t)n + 1;
    o->nfacts++;
}

int pl_out_fail(struct pl_out *o, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->note, sizeof o->note, fmt, ap);
    va_end(ap);
    return err;
}
