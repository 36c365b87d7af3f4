/* Starting pagelab's worker processes. */
#ifndef PL_WORKER_H
#define PL_WORKER_H

#include <signal.h>
#include <sys/types.h>

/* The signal a worker gets when its caller dies. Until pl_worker_guard() runs, its default action
 * ends the worker; from then on its handler SIGKILLs the worker's whole process group, so what
 * the worker started (a C cell's forked children) dies with it. */
#define PL_WORKER_DEATH_SIGNAL SIGHUP

/* Fork and execve(path, argv, envp) a worker in a session of its own, with fds[0..3] as its
 * fds 0 (stdin), 1, 2 and 3 (the result pipe). The death signal is armed before exec and the
 * child then checks that `parent` still lives, so no worker outlives its caller even if the
 * caller dies while the worker starts. PR_SET_PDEATHSIG fires when the forking *thread*
 * exits: call this from a thread that lives as long as the process. Only async-signal-safe
 * calls run between fork and exec. Returns the pid, or -errno (also the child's exec errno). */
pid_t pl_worker_spawn(const char *path, char *const argv[], char *const envp[], const int fds[4],
                      pid_t parent);

/* In the worker, first thing: make the death signal kill the worker's whole process group, and
 * make the worker the reaper of its orphaned descendants (so it can reap what it kills). Returns
 * 0 or -errno. */
int pl_worker_guard(void);

#endif
