#ifndef CLIBDEFLATE_SHIM_H
#define CLIBDEFLATE_SHIM_H
/* libdeflate: the same DEFLATE format as zlib, about 2.5 times faster at the same level and
   slightly smaller output; big catalogs spend most of their publishing time compressing. */
#include <libdeflate.h>
#endif
