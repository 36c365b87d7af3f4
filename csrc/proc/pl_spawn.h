/* Start a command held at a gate, so counters can be attached to its pid before it execs. */
#ifndef PL_SPAWN_H
#define PL_SPAWN_H

#include <sys/types.h>

/* Fork a child that waits on a pipe, then execv(path, argv) with stdout_fd as its standard
 * output (-1: inherited). On success returns the pid and sets *gate and *exec_status for
 * pl_spawn_release. Returns -errno on failure. */
pid_t pl_spawn_gated(const char *path, char *const argv[], int *gate, int *exec_status,
                     int stdout_fd);

/* Open the gate: the child execs. Returns 0 if exec succeeded, else the child's exec errno
 * (the child has then exited with status 127). Closes both fds. */
int pl_spawn_release(int gate, int exec_status);

#endif
