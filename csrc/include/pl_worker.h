/* Process setup for pagelab's worker processes. */
#ifndef PL_WORKER_H
#define PL_WORKER_H

/* Die with SIGKILL when the parent (the notebook kernel or CLI) goes away, so no worker is ever
 * left holding memory. Returns 0, or -ESRCH if the parent is already gone, or -errno. */
int pl_worker_init(void);

#endif
