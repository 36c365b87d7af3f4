#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pl_worker.h"

/* Above stdin, stdout, stderr and the result fd: the staging copies never collide with them. */
#define PL_WORKER_FD_STAGE 10
#define PL_WORKER_NFDS 4

_Noreturn static void child(const char *path, char *const argv[], char *const envp[],
                            const int fds[4], pid_t parent, int status_fd)
{
    int staged[PL_WORKER_NFDS];
    sigset_t none;
    int e = 0;
    /* A caller started under nohup ignores SIGHUP, and exec keeps an ignored signal ignored:
     * the death signal must end the worker until pl_worker_guard() takes it over. */
    if (signal(PL_WORKER_DEATH_SIGNAL, SIG_DFL) == SIG_ERR || setsid() < 0 ||
        prctl(PR_SET_PDEATHSIG, PL_WORKER_DEATH_SIGNAL) != 0)
        e = errno;
    else if (getppid() != parent)
        _exit(127); /* the caller died before the death signal was armed: nobody waits for us */
    for (int i = 0; !e && i < PL_WORKER_NFDS; i++)
        if ((staged[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, PL_WORKER_FD_STAGE)) < 0)
            e = errno;
    for (int i = 0; !e && i < PL_WORKER_NFDS; i++)
        if (dup2(staged[i], i) < 0) /* the copy at i is inherited: dup2 clears FD_CLOEXEC */
            e = errno;
    sigemptyset(&none);
    if (!e && sigprocmask(SIG_SETMASK, &none, NULL) == 0 && signal(SIGPIPE, SIG_DFL) != SIG_ERR)
        execve(path, argv, envp);
    e = e ? e : errno;
    (void)!write(status_fd, &e, sizeof e); /* status_fd closes on a successful exec */
    _exit(127);
}

static void kill_group(int sig)
{
    (void)sig;
    kill(0, SIGKILL); /* async-signal-safe: the worker and all it started, its whole group */
}

int pl_worker_guard(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = kill_group;
    sigemptyset(&sa.sa_mask);
    if (sigaction(PL_WORKER_DEATH_SIGNAL, &sa, NULL) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        return -errno;
    return 0;
}

pid_t pl_worker_spawn(const char *path, char *const argv[], char *const envp[], const int fds[4],
                      pid_t parent)
{
    int status[2];
    if (pipe2(status, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid == 0)
        child(path, argv, envp, fds, parent, status[1]);
    int e = pid < 0 ? errno : 0;
    close(status[1]);
    if (pid > 0) {
        ssize_t got;
        while ((got = read(status[0], &e, sizeof e)) < 0 && errno == EINTR)
            ;
        if (got != (ssize_t)sizeof e)
            e = 0; /* EOF: the exec went through */
        else
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
    }
    close(status[0]);
    return e ? -e : pid;
}
