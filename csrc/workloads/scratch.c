/* The scratch file of the workloads that need one (mmap-modes, competition). Python chooses the
 * directory by one rule (pylib/pagelab/native/scratch.py) and makes it the worker's working
 * directory; this file only creates the file there. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/pl_compat.h"
#include "pl_workloads.h"

int pl_scratch_file(const char *tag, int *named)
{
    *named = 0;
    int fd = open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    /* no O_TMPFILE on this filesystem: a named file, unlinked at once */
    *named = 1;
    char path[64];
    snprintf(path, sizeof path, "pagelab-%s-XXXXXX", tag);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0 && unlink(path) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}
