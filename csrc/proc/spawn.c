#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "pl_spawn.h"

/* The child only calls async-signal-safe functions: the parent may be a threaded Jupyter kernel. */
pid_t pl_spawn_gated(const char *path, char *const argv[], int *gate, int *exec_status,
                     int stdout_fd)
{
    int go[2], status[2];
    if (pipe2(go, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(status, O_CLOEXEC) < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        return -e;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        close(status[0]);
        close(status[1]);
        return -e;
    }
    if (pid == 0) {
        char c;
        close(go[1]);
        close(status[0]);
        if (read(go[0], &c, 1) != 1)
            _exit(127); /* the parent gave up before opening the gate */
        if (stdout_fd >= 0 && dup2(stdout_fd, STDOUT_FILENO) < 0)
            _exit(127);
        execv(path, argv);
        int e = errno;
        (void)!write(status[1], &e, sizeof e); /* status[1] closes on a successful exec */
        _exit(127);
    }
    close(go[0]);
    close(status[1]);
    *gate = go[1];
    *exec_status = status[0];
    return pid;
}

int pl_spawn_release(int gate, int exec_status)
{
    int e = 0;
    if (write(gate, "x", 1) != 1)
        e = errno;
    close(gate);
    if (!e && read(exec_status, &e, sizeof e) != (ssize_t)sizeof e)
        e = 0; /* EOF: the exec went through */
    close(exec_status);
    return e;
}
