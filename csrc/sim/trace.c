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
    t->buf = malloc(PL_TRACE_BUF);
    if (!t->buf) {
        free(t);
        return -ENOMEM;
    }
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

/* Keep the unread tail, top the buffer up. 0, or -errno. */
static int refill(struct pl_trace *t)
{
    memmove(t->buf, t->buf + t->pos, t->len - t->pos);
    t->len -= t->pos;
    t->pos = 0;
    while (t->len < PL_TRACE_BUF) {
        ssize_t n = read(t->fd, t->buf + t->len, PL_TRACE_BUF - t->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0) {
            t->eof = 1;
            break;
        }
        t->len += (uint64_t)n;
    }
    return 0;
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A valgrind message line: ==PID==, --PID-- or **PID**. */
static int valgrind_message(const char *p, const char *e)
{
    return e - p >= 2 && (p[0] == '=' || p[0] == '-' || p[0] == '*') && p[1] == p[0];
}

static int bad(struct pl_trace *t, const char *why)
{
    snprintf(t->err, sizeof t->err, "%s", why);
    return -EBADMSG;
}

/* Parse one line [p, e). 1: a record in *op, *addr, *size (op 'I' for instructions), 0: a line to
 * skip, -EBADMSG: malformed. */
static int parse_line(struct pl_trace *t, const char *p, const char *e, char *op, uint64_t *addr,
                      uint32_t *size)
{
    if (e > p && e[-1] == '\r')
        e--;
    while (p < e && blank(*p))
        p++;
    if (p == e)
        return 0;
    if (valgrind_message(p, e))
        return 0;
    if (!(*p == 'I' || *p == 'L' || *p == 'S' || *p == 'M') || p + 1 == e || !blank(p[1]))
        return bad(t, "not a lackey record (expected I, L, S or M, a blank, then addr,size)");
    *op = *p++;
    while (p < e && blank(*p))
        p++;
    if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    uint64_t a = 0;
    const char *digits = p;
    for (int v; p < e && (v = hexval(*p)) >= 0; p++) {
        if (a >> 60)
            return bad(t, "address does not fit in 64 bits");
        a = a << 4 | (uint64_t)v;
    }
    if (p == digits)
        return bad(t, "missing hexadecimal address");
    if (p == e || *p != ',')
        return bad(t, "expected ',' after the address");
    p++;
    uint64_t s = 0;
    digits = p;
    for (; p < e && *p >= '0' && *p <= '9'; p++) {
        s = s * 10 + (uint64_t)(*p - '0');
        if (s > UINT32_MAX)
            return bad(t, "size does not fit in 32 bits");
    }
    if (p == digits)
        return bad(t, "missing decimal size after ','");
    if (s == 0)
        return bad(t, "size 0 (an access covers at least one byte)");
    if (p < e && !blank(*p))
        return bad(t, "unexpected text after the size");
    *addr = a;
    *size = (uint32_t)s;
    return 1;
}

long pl_trace_read(struct pl_trace *t, uint64_t *addr, uint32_t *size, uint8_t *op, long cap)
{
    long n = 0;
    while (n < cap) {
        char *p = t->buf + t->pos, *end = t->buf + t->len;
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            if (t->eof) {
                if (p == end)
                    break;
                nl = end; /* the last line has no newline */
            } else {
                if (t->pos == 0 && t->len == PL_TRACE_BUF) {
                    t->line++;
                    return bad(t, "line longer than 1 MiB");
                }
                int rc = refill(t);
                if (rc)
                    return rc;
                continue;
            }
        }
        t->line++;
        char o;
        uint64_t a;
        uint32_t s;
        int r = parse_line(t, p, nl, &o, &a, &s);
        if (r < 0)
            return r;
        t->pos = (uint64_t)(nl - t->buf) + (nl < end);
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
            op[n] = PL_OP_LOAD;
            break;
        case 'S':
            t->stores++;
            op[n] = PL_OP_STORE;
            break;
        default:
            t->modifies++;
            op[n] = PL_OP_MODIFY;
            break;
        }
        addr[n] = a;
        size[n] = s;
        n++;
    }
    return n;
}
