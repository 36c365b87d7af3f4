/* Reading valgrind lackey traces (valgrind --tool=lackey --trace-mem=yes --log-file=FILE).
 *
 * Records, one a line: "I  addr,size" (an instruction fetch), " L addr,size" (load),
 * " S addr,size" (store), " M addr,size" (modify: a load then a store), addr in hex (an optional
 * 0x is accepted), size in decimal, 1 to PL_SIM_MAX_ACCESS. Leading blanks are free; anything
 * after blanks following the size is a comment. Blank lines and valgrind's own messages (lines
 * starting with ==PID==, --PID-- or **PID**) are skipped. Any other line is malformed: reading
 * stops there with its line number and what was wrong. I records are counted, never returned:
 * pagelab models the data side.
 *
 * A trace is read once, front to back, so pipes, FIFOs and /dev/stdin work as files do. */
#ifndef PL_TRACE_H
#define PL_TRACE_H

#include <stdint.h>

#include "pl_sim.h"

/* Read size: large enough that read(2) costs nothing next to parsing; also the longest line. */
#define PL_TRACE_BUF (1u << 20)
#define PL_TRACE_ERR_LEN 96

struct pl_trace {
    int fd;
    char *buf;          /* PL_TRACE_BUF bytes and one for the newline a last line may lack */
    uint64_t len, pos;  /* bytes in buf, bytes consumed */
    uint64_t lines_end; /* end of the last whole line in buf: parsing never looks past it */
    int eof;
    int failed;    /* the error returned once, returned again by every later call */
    uint64_t line; /* lines consumed so far; after an error, the bad line's number */
    uint64_t instr, loads, stores, modifies, skipped;
    char err[PL_TRACE_ERR_LEN]; /* why the line was malformed */
};

/* 0 and *out, or -errno (ENOENT, EACCES, EINTR while a FIFO waits for a writer, ENOMEM). A
 * directory fails at the first read with -EISDIR. */
int pl_trace_open(const char *path, struct pl_trace **out);
void pl_trace_close(struct pl_trace *t);
/* Parse up to cap data records into addr/size/op (PL_OP_* of pl_sim.h). Returns how many (0 at
 * the end of the trace), -EBADMSG for a malformed line (t->line, t->err), or -errno. -EINTR
 * (a signal arrived while read(2) waited) is not final: call again to go on. */
long pl_trace_read(struct pl_trace *t, uint64_t *addr, uint32_t *size, uint8_t *op, long cap);
/* Parse up to cap data records and simulate each as it is read (M: a load then a store); with
 * ignore_size every access is 1 byte (cache-lab mode). Returns and fails as pl_trace_read. */
long pl_trace_replay(struct pl_trace *t, struct pl_sim *sim, long cap, int ignore_size);

#endif
