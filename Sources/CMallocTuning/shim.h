#ifndef CMALLOCTUNING_SHIM_H
#define CMALLOCTUNING_SHIM_H
#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
/// Keeps glibc from raising its mmap threshold after large buffers are freed, so feeds of many
/// megabytes go back to the system when done instead of growing the heap for good.
static inline void cmalloctuning_fix_mmap_threshold(int bytes) { mallopt(M_MMAP_THRESHOLD, bytes); }
#else
static inline void cmalloctuning_fix_mmap_threshold(int bytes) { (void)bytes; }
#endif
#endif
