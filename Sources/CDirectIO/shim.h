#ifndef CDIRECTIO_SHIM_H
#define CDIRECTIO_SHIM_H
// O_DIRECT is a GNU extension that Swift's Glibc module does not export; its value differs
// between architectures, so it comes from the C headers rather than a Swift literal.
#define _GNU_SOURCE 1
#include <fcntl.h>
#ifdef O_DIRECT
static inline int cdirectio_open_flag(void) { return O_DIRECT; }
#else
static inline int cdirectio_open_flag(void) { return 0; }
#endif
#endif
