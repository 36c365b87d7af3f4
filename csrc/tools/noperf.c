/* pl-noperf: run a command with perf_event_open denied (EACCES), as a container's seccomp profile
 * would deny it. This is how the tests produce pagelab's "blocked" profile for real.
 * usage: pl-noperf CMD [ARG ...] */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "pl-noperf: add this architecture's AUDIT_ARCH_* value"
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CMD [ARG ...]\n", argv[0]);
        return 2;
    }
    struct sock_filter filter[] = {
        /* a syscall from another ABI (e.g. 32-bit int 0x80) could dodge the number check: deny */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    /* required to install a filter without CAP_SYS_ADMIN, and keeps setuid binaries honest */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("pl-noperf: prctl(PR_SET_NO_NEW_PRIVS)");
        return 1;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("pl-noperf: prctl(PR_SET_SECCOMP)");
        return 1;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "pl-noperf: cannot run %s: %s\n", argv[1], strerror(errno));
    return 127;
}
