#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl_sim.h"
#include "pl_trace.h"

int pl_trace_open(const char *path, struct pl_trace **out)
{
    *out = NULL;
    struct pl_trace *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->buf = malloc(PL_TRACE_BUF + 1);
    if (!t->buf) {
        free(t);
        return -ENOMEM;
    }
    /* a FIFO blocks here until a writer opens it, as for cat; a signal ends the wait (EINTR) */
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (t->fd < 0) {
        int e = errno;
        pl_trace_close(t);
        return -e;
    }
    *out = t;
    return 0;
}

void pl_trace_close(struct pl_trace *t)
{
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    free(t->buf);
    free(t);
}

static int bad(struct pl_trace *t, const char *why)
{
    snprintf(t->err, sizeof t->err, "%s", why);
    return t->failed = -EBADMSG;
}

/* Keep the unread tail and read until the buffer holds a whole line (or the trace ends). 0, or
 * -errno; -EINTR returns to the caller, which checks for Ctrl-C and calls again. */
static int refill(struct pl_trace *t)
{
    memmove(t->buf, t->buf + t->pos, t->len - t->pos);
    t->len -= t->pos;
    t->pos = 0;
    char *nl = NULL;
    while (!nl && !t->eof && t->len < PL_TRACE_BUF) {
        ssize_t n = read(t->fd, t->buf + t->len, PL_TRACE_BUF - t->len);
        if (n < 0)
            return -errno;
        if (n == 0)
            t->eof = 1;
        nl = memrchr(t->buf + t->len, '\n', (size_t)n);
        t->len += (uint64_t)n;
    }
    if (t->eof && t->len && t->buf[t->len - 1] != '\n') {
        t->buf[t->len++] = '\n'; /* the last line has no newline: the spare byte holds one */
        nl = t->buf + t->len - 1;
    }
    if (!nl && !t->eof) {
        t->line++;
        return bad(t, "line longer than 1 MiB");
    }
    t->lines_end = nl ? (uint64_t)(nl - t->buf) + 1 : 0;
    return 0;
}

static inline int blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Hex digit values + 1; 0 for every other byte. */
static const uint8_t HEX1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Parse the line at *pp, which ends with a newline inside the buffer (so no loop below needs a
 * bounds check: each stops at the newline), and move *pp past it. 1: a record in *op, *addr,
 * *size (op 'I' for instructions), 0: a line to skip, -EBADMSG: malformed. */
static inline int parse_line(struct pl_trace *t, const char **pp, char *op, uint64_t *addr,
                             uint32_t *size)
{
    const char *p = *pp;
    while (blank(*p))
        p++;
    char c = *p;
    if (!((c == 'I' || c == 'L' || c == 'S' || c == 'M') && blank(p[1]))) {
        /* a blank line, a valgrind message (==PID==, --PID--, **PID**), or nothing we know */
        if (c == '\n' || (c == '\r' && p[1] == '\n') ||
            ((c == '=' || c == '-' || c == '*') && p[1] == c)) {
            *pp = (const char *)rawmemchr(p, '\n') + 1;
            return 0;
        }
        return bad(t, "not a lackey record (expected I, L, S or M, a blank, then addr,size)");
    }
    p += 2;
    while (blank(*p))
        p++;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    uint64_t a = 0;
    const char *digits = p;
    for (unsigned v; (v = HEX1[(unsigned char)*p]); p++) {
        if (a >> 60)
            return bad(t, "address does not fit in 64 bits");
        a = a << 4 | (v - 1);
    }
    if (p == digits)
        return bad(t, "missing hexadecimal address");
    if (*p != ',')
        return bad(t, "expected ',' after the address");
    p++;
    uint32_t s = 0;
    digits = p;
    for (; (unsigned)(*p - '0') < 10; p++) {
        s = s * 10 + (uint32_t)(*p - '0');
        if (s > PL_SIM_MAX_ACCESS)
            return bad(t, "size larger than a lackey record holds (1 to 512 bytes)");
    }
    if (p == digits)
        return bad(t, "missing decimal size after ','");
    if (s == 0)
        return bad(t, "size 0 (an access covers at least one byte)");
    if (*p == '\r' && p[1] == '\n')
        p++;
    else if (blank(*p))
        p = rawmemchr(p, '\n'); /* a comment */
    else if (*p != '\n')
        return bad(t, "unexpected text after the size");
    *pp = p + 1;
    *op = c;
    *addr = a;
    *size = s;
    return 1;
}

/* The next data record: 1 and its PL_OP_*, address and size; 0 at the end; or -errno. */
static inline int next_record(struct pl_trace *t, uint8_t *op, uint64_t *addr, uint32_t *size)
{
    if (t->failed)
        return t->failed;
    for (;;) {
        if (t->pos == t->lines_end) {
            if (t->eof && t->pos == t->len)
                return 0;
            int rc = refill(t);
            if (rc)
                return rc;
            continue;
        }
        const char *p = t->buf + t->pos;
        char o;
        t->line++;
        int r = parse_line(t, &p, &o, addr, size);
        if (r < 0)
            return r;
        t->pos = (uint64_t)(p - t->buf);
        if (r == 0) {
            t->skipped++;
            continue;
        }
        switch (o) {
        case 'I':
            t->instr++;
            continue;
        case 'L':
            t->loads++;
            *op = PL_OP_LOAD;
            return 1;
        case 'S':
            t->stores++;
            *op = PL_OP_STORE;
            return 1;
        default:
            t->modifies++;
            *op = PL_OP_MODIFY;
            return 1;
        }
    }
}

long pl_trace_read(struct pl_trace *t, uint64_t *addr, uint32_t *size, uint8_t *op, long cap)
{
    long n = 0;
    while (n < cap) {
        int r = next_record(t, &op[n], &addr[n], &size[n]);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        n++;
    }
    return n;
}

long pl_trace_replay(struct pl_trace *t, struct pl_sim *sim, long cap, int ignore_size)
{
    long n = 0;
    uint8_t op = 0;
    uint64_t addr = 0;
    uint32_t size = 0;
    while (n < cap) {
        int r = next_record(t, &op, &addr, &size);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        if (ignore_size)
            size = 1;
        if (op != PL_OP_STORE)
            pl_sim_access(sim, addr, size, 0);
        if (op != PL_OP_LOAD)
            pl_sim_access(sim, addr, size, 1);
        n++;
    }
    return n;
}
