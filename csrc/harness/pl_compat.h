/* Kernel flags newer than some C libraries' headers. The oldest headers pagelab claims are
 * glibc 2.28 with Linux 4.18 headers (conda-forge's sysroot_linux-64 2.28, pinned in
 * environment.yml), which lack MADV_PAGEOUT; the other fallbacks cover older glibc headers on a
 * newer kernel. Each value is the kernel's own for x86-64 and the asm-generic architectures (a
 * few others, e.g. alpha, parisc and sparc, differ and are not supported). On a kernel without the
 * feature a call fails cleanly (EINVAL, EISDIR) or, for MAP_FIXED_NOREPLACE, is a hint whose
 * address the caller checks. tests/native/test_csrc_flags.py compiles csrc/ with these names
 * removed, so the fallbacks stay used. */
#ifndef PL_COMPAT_H
#define PL_COMPAT_H

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* Linux 5.4, glibc 2.31; older kernels say EINVAL */
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17, glibc 2.28; older kernels take it as a hint */
#endif
#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY) /* Linux 3.11, glibc 2.19; older kernels: EISDIR */
#endif
#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41 /* Linux 3.15; older kernels say EINVAL */
#endif

#endif
