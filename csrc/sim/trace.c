#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl_sim.h"
#include "pl_trace.h"

/* The address parser loads 8 bytes at a time and may read up to 7 bytes past a line's end (their
 * values are shifted out): the buffer has that many spare bytes, zeroed once. */
#define LOAD_PAD 8

int pl_trace_open(const char *path, struct pl_trace **out)
{
    *out = NULL;
    struct pl_trace *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->buf = calloc(1, PL_TRACE_BUF + 1 + LOAD_PAD);
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

/* The 8 bytes at p, first byte lowest, on any host. */
static inline uint64_t load_le64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The value of the n (0..8) hex digits that start the little-endian word v, without a loop:
 * the digits move to the top bytes, each byte becomes its nibble ('0'-'9': low 4 bits; letters,
 * which have bit 6 set: low 4 bits + 9), then pairs, quads and octets of nibbles merge. */
static inline uint64_t hex_word(uint64_t v, unsigned n)
{
    if (n == 0)
        return 0;
    v <<= 8 * (8 - n);
    uint64_t x = (v & 0x0F0F0F0F0F0F0F0Full) + ((v & 0x4040404040404040ull) >> 6) * 9;
    x = ((x << 4) | (x >> 8)) & 0x00FF00FF00FF00FFull;
    x = ((x << 8) | (x >> 16)) & 0x0000FFFF0000FFFFull;
    return ((x << 16) | (x >> 32)) & 0xFFFFFFFFull;
}

/* Parse the line at *pp, which ends with a newline inside the buffer (so no loop below needs a
 * bounds check: each stops at the newline), and move *pp past it. 1: a record in *op, *addr,
 * *size (op 'I' for instructions), 0: a line to skip, -EBADMSG: malformed. */
static inline __attribute__((always_inline)) int
parse_line(struct pl_trace *t, const char **pp, char *op, uint64_t *addr, uint32_t *size)
{
    const char *p = *pp;
    /* lackey's own layouts, "I  addr" and " L addr", skip the loops over blanks: their exits
     * alternate from one line to the next, which the host cannot predict */
    int lead = p[0] == ' ';
    char c = p[lead];
    if ((c == 'I' || c == 'L' || c == 'S' || c == 'M') && (lead || blank(p[1])) && blank(p[2]) &&
        !blank(p[3])) {
        p += 3;
    } else {
        while (blank(*p))
            p++;
        c = *p;
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
    }
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    const char *digits = p;
    while (HEX1[(unsigned char)*p])
        p++;
    unsigned n = (unsigned)(p - digits);
    while (n > 16 && *digits == '0') {
        digits++;
        n--;
    }
    if (n > 16)
        return bad(t, "address does not fit in 64 bits");
    if (n == 0)
        return bad(t, "missing hexadecimal address");
    uint64_t a = 0; /* an instruction's address is checked, never used */
    if (c != 'I')
        a = n > 8
                ? hex_word(load_le64(digits), n - 8) << 32 | hex_word(load_le64(digits + n - 8), 8)
                : hex_word(load_le64(digits), n);
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
