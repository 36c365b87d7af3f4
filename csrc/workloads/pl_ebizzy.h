/* The ebizzy workload's hot functions. They are exported (not static) on purpose: the fault
 * profile names code locations with dladdr, which only sees exported symbols. */
#ifndef PL_EBIZZY_H
#define PL_EBIZZY_H

#include <stddef.h>
#include <stdint.h>

/* Copy len bytes (a multiple of 64) from src to dst: where a fresh buffer takes its faults. */
void pl_ebizzy_copy(void *dst, const void *src, size_t len);
/* Binary search for key in n sorted words; 1 if found. */
int pl_ebizzy_search(const uint64_t *words, size_t n, uint64_t key);

#endif
