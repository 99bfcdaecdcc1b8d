/* Linked into the ThreadSanitizer builds of scripts/ci.d/50-reliability.sh only.
 *
 * rustc's LLVM instruments memcpy/memmove/memset as calls to __tsan_memcpy & co., which newer
 * TSan runtimes export; the runtime of Debian's gcc 12 (libtsan.so.2) does not. These forward to
 * the C functions, which that runtime intercepts and checks exactly like __tsan_memcpy would
 * (compiler-rt defines __tsan_memcpy as a call to the intercepted memcpy). */
#include <string.h>

void *__tsan_memcpy(void *dst, const void *src, size_t n);
void *__tsan_memmove(void *dst, const void *src, size_t n);
void *__tsan_memset(void *dst, int c, size_t n);

void *__tsan_memcpy(void *dst, const void *src, size_t n) { return memcpy(dst, src, n); }
void *__tsan_memmove(void *dst, const void *src, size_t n) { return memmove(dst, src, n); }
void *__tsan_memset(void *dst, int c, size_t n) { return memset(dst, c, n); }
