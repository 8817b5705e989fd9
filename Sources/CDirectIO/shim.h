#ifndef CDIRECTIO_SHIM_H
#define CDIRECTIO_SHIM_H
// GNU extensions that Swift's Glibc module does not export. O_DIRECT's value differs between
// architectures, so it comes from the C headers rather than a Swift literal.
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <unistd.h>
#ifdef O_DIRECT
static inline int cdirectio_open_flag(void) { return O_DIRECT; }
#else
static inline int cdirectio_open_flag(void) { return 0; }
#endif
// syncfs(2): writes out every file of the file system holding `descriptor`, in one call (Linux).
// Elsewhere -1 with errno ENOSYS: the caller fsyncs each file instead.
#ifdef __linux__
static inline int cdirectio_syncfs(int descriptor) { return syncfs(descriptor); }
#else
#include <errno.h>
static inline int cdirectio_syncfs(int descriptor) { (void)descriptor; errno = ENOSYS; return -1; }
#endif
#endif
