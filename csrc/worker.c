#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "pl_worker.h"

int pl_worker_init(void)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return -errno;
    /* the parent may have died before prctl took effect: then nobody would ever kill us */
    return getppid() != parent ? -ESRCH : 0;
}
