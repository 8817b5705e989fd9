#ifndef CP256FIXEDKEY_H
#define CP256FIXEDKEY_H

#include <stdint.h>

/// ES256 verification for a P-256 key that signs many tokens (docs/purchases.md, "Signatures with
/// a key seen before"). BoringSSL's verification computes u1·G + u2·Q: G from a table built once,
/// Q by 255 doublings for every signature, most of its cost. For a key that signs again and again,
/// as the App Store's leaf does, the same kind of table is built once for Q too, and both products
/// are evaluated exactly as BoringSSL evaluates G's, with its own point and field arithmetic.

/// A key's table: multiples j·2^(7i)·P for i < 37 and 1 <= j <= 64, about 150 KB.
typedef struct cp256_table cp256_table;

/// 1 when this machine runs the fixed-key verification (x86-64 Linux with AVX; elsewhere callers
/// keep to swift-crypto's).
int cp256_available(void);

/// The table of the point `x963` (0x04, X and Y big-endian), or NULL when the bytes are not a point
/// of P-256 other than infinity, when memory runs out, or when `cp256_available()` is 0.
cp256_table *cp256_table_new(const uint8_t x963[65]);

void cp256_table_free(cp256_table *table);

/// The ECDSA verification of `signature` (r then s, 32 bytes each, big-endian) over the SHA-256
/// `digest`, for the key of `key` (the generator's table is `generator`): 1 when it verifies, 0
/// otherwise. Everything it reads is public, so it need not run in constant time (neither does
/// BoringSSL's verification).
int cp256_verify(const cp256_table *generator, const cp256_table *key, const uint8_t digest[32], const uint8_t signature[64]);

#endif
