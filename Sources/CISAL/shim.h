#ifndef CISAL_SHIM_H
#define CISAL_SHIM_H
/* ISA-L's igzip: DEFLATE at about twice libdeflate's level-1 speed, for a copy about 7% larger;
   used for the gzip copies of files over a mebibyte, where compressing dominated publishing. */
#include <isa-l/igzip_lib.h>

/* The level-1 working buffer size: the macro is an expression Swift does not import. */
static inline unsigned int cisal_level1_buffer_bytes(void) { return ISAL_DEF_LVL1_DEFAULT; }
/* The level-0 working buffer size, for the notification bodies compressed against another. */
static inline unsigned int cisal_level0_buffer_bytes(void) { return ISAL_DEF_LVL0_DEFAULT; }
#endif
