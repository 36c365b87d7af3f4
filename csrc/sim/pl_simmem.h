/* Memory for the simulator's tables. Private to csrc/sim. */
#ifndef PL_SIMMEM_H
#define PL_SIMMEM_H

#include <stddef.h>

#include "pl_sim.h"

/* Internal to the simulator: calls bind inside the module and may be inlined. */
#pragma GCC visibility push(hidden)

/* Tables of at least PL_HUGE_PAGE are aligned to it and advised onto transparent huge pages:
 * the model touches them at random, and on 4 KiB pages a large LLC's tables would cost a host
 * TLB miss on nearly every simulated access. */

/* Uninitialised (pl_big_alloc) or zeroed (pl_big_zalloc) memory, NULL when out of memory or
 * when n * size overflows. Release with free(). */
void *pl_big_alloc(size_t n, size_t size);
void *pl_big_zalloc(size_t n, size_t size);
/* p (from these functions) moved to a new array of n elements that begins with its first keep
 * (<= n); NULL, with p untouched, when out of memory. Unlike realloc, a large result is
 * aligned and advised as above. */
void *pl_big_resize(void *p, size_t keep, size_t n, size_t size);
/* Zeroed pages of their own mapping, returned to the kernel whole by pl_pages_unmap (free()
 * may keep them); NULL when out of memory. */
void *pl_pages_map(size_t bytes);
void pl_pages_unmap(void *p, size_t bytes);

#pragma GCC visibility pop

#endif
