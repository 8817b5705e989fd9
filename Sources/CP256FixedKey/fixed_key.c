// ES256 verification with a precomputed table for the signing key (include/CP256FixedKey.h).
//
// Built on BoringSSL's own P-256 arithmetic, as swift-crypto links it (the assembly of
// p256-x86_64-asm.pl and p256_beeu-x86_64-asm.pl, under the CCryptoBoringSSL_ prefix): nothing of
// the field or the curve is written here. What is here is what BoringSSL's
// ecp_nistz256_points_mul_public does for the generator (crypto/fipsmodule/ec/p256-nistz.cc.inc:
// Booth-recoded windows of 7 bits, 37 rows of 64 affine points, one mixed addition a row), done
// with a table of the key as well as with one of the generator, and its verification around it
// (ecdsa_verify_fixed, ecp_nistz256_cmp_x_coordinate). The two products are summed with the full
// addition, which handles equal points and infinity, as BoringSSL sums them.

#include "CP256FixedKey.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__)

typedef uint64_t limb;
typedef struct {
    limb X[4], Y[4], Z[4];
} point;  // Jacobian, Montgomery domain; infinity has Z = 0
typedef struct {
    limb X[4], Y[4];
} affine;  // Montgomery domain; infinity is (0, 0)

struct cp256_table {
    affine points[37 * 64];
};

extern void CCryptoBoringSSL_ecp_nistz256_neg(limb r[4], const limb a[4]);
extern void CCryptoBoringSSL_ecp_nistz256_mul_mont_adx(limb r[4], const limb a[4], const limb b[4]);
extern void CCryptoBoringSSL_ecp_nistz256_mul_mont_nohw(limb r[4], const limb a[4], const limb b[4]);
extern void CCryptoBoringSSL_ecp_nistz256_sqr_mont_adx(limb r[4], const limb a[4]);
extern void CCryptoBoringSSL_ecp_nistz256_sqr_mont_nohw(limb r[4], const limb a[4]);
extern void CCryptoBoringSSL_ecp_nistz256_ord_mul_mont_adx(limb r[4], const limb a[4], const limb b[4]);
extern void CCryptoBoringSSL_ecp_nistz256_ord_mul_mont_nohw(limb r[4], const limb a[4], const limb b[4]);
extern int CCryptoBoringSSL_beeu_mod_inverse_vartime(limb out[4], const limb a[4], const limb n[4]);
extern void CCryptoBoringSSL_ecp_nistz256_point_double_adx(point *r, const point *a);
extern void CCryptoBoringSSL_ecp_nistz256_point_double_nohw(point *r, const point *a);
extern void CCryptoBoringSSL_ecp_nistz256_point_add_adx(point *r, const point *a, const point *b);
extern void CCryptoBoringSSL_ecp_nistz256_point_add_nohw(point *r, const point *a, const point *b);
extern void CCryptoBoringSSL_ecp_nistz256_point_add_affine_adx(point *r, const point *a, const affine *b);
extern void CCryptoBoringSSL_ecp_nistz256_point_add_affine_nohw(point *r, const point *a, const affine *b);

static const limb P[4] = {0xffffffffffffffff, 0x00000000ffffffff, 0x0000000000000000, 0xffffffff00000001};
static const limb N[4] = {0xf3b9cac2fc632551, 0xbce6faada7179e84, 0xffffffffffffffff, 0xffffffff00000000};
static const limb ONE[4] = {1, 0, 0, 0};
static const limb ONE_MONT[4] = {0x0000000000000001, 0xffffffff00000000, 0xffffffffffffffff, 0x00000000fffffffe};
static const limb RR_P[4] = {0x0000000000000003, 0xfffffffbffffffff, 0xfffffffffffffffe, 0x00000004fffffffd};
static const limb RR_N[4] = {0x83244c95be79eea2, 0x4699799c49bd6fa6, 0x2845b2392b6bec59, 0x66e12d94f3d95620};
static const limb B_MONT[4] = {0xd89cdf6229c4bddf, 0xacf005cd78843090, 0xe5a220abf7212ed6, 0xdc30061d04874834};

// BoringSSL's dispatch (CRYPTO_is_BMI2_capable and CRYPTO_is_ADX_capable), read once. Threads that
// race to read it first store the same answer.
static int adx(void) {
    static int known = -1;
    int answer = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (answer < 0) {
        __builtin_cpu_init();
        answer = __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("adx");
        __atomic_store_n(&known, answer, __ATOMIC_RELAXED);
    }
    return answer;
}

static void mul_mont(limb r[4], const limb a[4], const limb b[4]) {
    if (adx()) CCryptoBoringSSL_ecp_nistz256_mul_mont_adx(r, a, b);
    else CCryptoBoringSSL_ecp_nistz256_mul_mont_nohw(r, a, b);
}
static void sqr_mont(limb r[4], const limb a[4]) {
    if (adx()) CCryptoBoringSSL_ecp_nistz256_sqr_mont_adx(r, a);
    else CCryptoBoringSSL_ecp_nistz256_sqr_mont_nohw(r, a);
}
static void ord_mul_mont(limb r[4], const limb a[4], const limb b[4]) {
    if (adx()) CCryptoBoringSSL_ecp_nistz256_ord_mul_mont_adx(r, a, b);
    else CCryptoBoringSSL_ecp_nistz256_ord_mul_mont_nohw(r, a, b);
}
static void point_double(point *r, const point *a) {
    if (adx()) CCryptoBoringSSL_ecp_nistz256_point_double_adx(r, a);
    else CCryptoBoringSSL_ecp_nistz256_point_double_nohw(r, a);
}
static void point_add(point *r, const point *a, const point *b) {
    if (adx()) CCryptoBoringSSL_ecp_nistz256_point_add_adx(r, a, b);
    else CCryptoBoringSSL_ecp_nistz256_point_add_nohw(r, a, b);
}
// Must not be given the same point twice unless both are infinity (see evaluate).
static void point_add_affine(point *r, const point *a, const affine *b) {
    if (adx()) CCryptoBoringSSL_ecp_nistz256_point_add_affine_adx(r, a, b);
    else CCryptoBoringSSL_ecp_nistz256_point_add_affine_nohw(r, a, b);
}

// Plain 256-bit integers, little-endian limbs.
static int is_zero(const limb a[4]) { return (a[0] | a[1] | a[2] | a[3]) == 0; }
static int equal(const limb a[4], const limb b[4]) { return memcmp(a, b, 4 * sizeof(limb)) == 0; }
static int less_than(const limb a[4], const limb b[4]) {
    for (int i = 3; i >= 0; i--) {
        if (a[i] != b[i]) return a[i] < b[i];
    }
    return 0;
}
static limb add(limb r[4], const limb a[4], const limb b[4]) {
    unsigned __int128 carry = 0;
    for (int i = 0; i < 4; i++) {
        carry += (unsigned __int128)a[i] + b[i];
        r[i] = (limb)carry;
        carry >>= 64;
    }
    return (limb)carry;
}
static limb subtract(limb r[4], const limb a[4], const limb b[4]) {
    limb borrow = 0;
    for (int i = 0; i < 4; i++) {
        unsigned __int128 difference = (unsigned __int128)a[i] - b[i] - borrow;
        r[i] = (limb)difference;
        borrow = (limb)(difference >> 64) & 1;
    }
    return borrow;
}
static void from_big_endian(limb r[4], const uint8_t bytes[32]) {
    for (int i = 0; i < 4; i++) {
        limb word = 0;
        for (int j = 0; j < 8; j++) word = (word << 8) | bytes[(3 - i) * 8 + j];
        r[i] = word;
    }
}

// The field mod P, on fully reduced elements (either domain).
static void field_add(limb r[4], const limb a[4], const limb b[4]) {
    limb sum[4];
    limb carry = add(sum, a, b);
    if (carry || !less_than(sum, P)) subtract(sum, sum, P);
    memcpy(r, sum, sizeof(sum));
}
static void field_subtract(limb r[4], const limb a[4], const limb b[4]) {
    limb difference[4];
    if (subtract(difference, a, b)) add(difference, difference, P);
    memcpy(r, difference, sizeof(difference));
}
// a^(P-2) = 1/a, in the Montgomery domain; a is not zero.
static void field_invert(limb r[4], const limb a[4]) {
    limb exponent[4], result[4];
    static const limb TWO[4] = {2, 0, 0, 0};
    subtract(exponent, P, TWO);
    memcpy(result, ONE_MONT, sizeof(result));
    for (int bit = 255; bit >= 0; bit--) {
        sqr_mont(result, result);
        if ((exponent[bit / 64] >> (bit % 64)) & 1) mul_mont(result, result, a);
    }
    memcpy(r, result, sizeof(result));
}

// Rows of 64 Jacobian points to affine, with one inversion (Montgomery's trick). No Z is zero.
static void to_affine(affine out[64], const point in[64]) {
    limb products[64][4], inverse[4];
    memcpy(products[0], in[0].Z, sizeof(products[0]));
    for (int k = 1; k < 64; k++) mul_mont(products[k], products[k - 1], in[k].Z);
    field_invert(inverse, products[63]);
    for (int k = 63; k >= 0; k--) {
        limb zinv[4], zinv2[4], zinv3[4];
        if (k > 0) {
            mul_mont(zinv, inverse, products[k - 1]);
            mul_mont(inverse, inverse, in[k].Z);
        } else {
            memcpy(zinv, inverse, sizeof(zinv));
        }
        sqr_mont(zinv2, zinv);
        mul_mont(zinv3, zinv2, zinv);
        mul_mont(out[k].X, in[k].X, zinv2);
        mul_mont(out[k].Y, in[k].Y, zinv3);
    }
}

int cp256_available(void) {
    __builtin_cpu_init();
    // BoringSSL runs beeu_mod_inverse_vartime only with AVX (ecp_nistz256_scalar_to_montgomery_inv_vartime).
    return __builtin_cpu_supports("avx");
}

cp256_table *cp256_table_new(const uint8_t x963[65]) {
    if (!cp256_available() || x963[0] != 0x04) return NULL;
    limb x[4], y[4];
    from_big_endian(x, x963 + 1);
    from_big_endian(y, x963 + 33);
    if (!less_than(x, P) || !less_than(y, P)) return NULL;
    point base;
    mul_mont(base.X, x, RR_P);
    mul_mont(base.Y, y, RR_P);
    memcpy(base.Z, ONE_MONT, sizeof(base.Z));
    // On the curve: y^2 = x^3 - 3x + b. (Infinity has no affine coordinates, so is not taken.)
    limb left[4], right[4], three_x[4];
    sqr_mont(left, base.Y);
    sqr_mont(right, base.X);
    mul_mont(right, right, base.X);
    field_add(three_x, base.X, base.X);
    field_add(three_x, three_x, base.X);
    field_subtract(right, right, three_x);
    field_add(right, right, B_MONT);
    if (!equal(left, right)) return NULL;

    cp256_table *table = NULL;
    if (posix_memalign((void **)&table, 64, sizeof(cp256_table)) != 0) return NULL;
    point row[64];
    // Row i holds j·2^(7i)·P for j = 1...64: P's multiples, never infinity (the order is prime
    // and larger than j·2^(7i) has factors), so every Z is non-zero.
    for (int i = 0; i < 37; i++) {
        row[0] = base;
        point_double(&row[1], &base);
        for (int j = 2; j < 64; j++) point_add(&row[j], &row[j - 1], &base);
        to_affine(&table->points[i * 64], row);
        for (int d = 0; d < 7; d++) point_double(&base, &base);
    }
    return table;
}

void cp256_table_free(cp256_table *table) { free(table); }

// BoringSSL's booth_recode_w7, calc_first_wvalue and calc_wvalue.
static uint64_t booth_recode_w7(uint64_t in) {
    uint64_t s = ~((in >> 7) - 1);
    uint64_t d = (1 << 8) - in - 1;
    d = (d & s) | (in & ~s);
    d = (d >> 1) + (d & 1);
    return (d << 1) + (s & 1);
}

// scalar·P for the table of P, as ecp_nistz256_points_mul_public computes g_scalar·G. The scalar
// is fully reduced (less than N): then the sum so far is never the row's point, which
// point_add_affine could not add (BoringSSL's note there).
static void evaluate(point *out, const cp256_table *table, const limb scalar[4]) {
    uint8_t bytes[33];
    for (int i = 0; i < 32; i++) bytes[i] = (uint8_t)(scalar[i / 8] >> (8 * (i % 8)));
    bytes[32] = 0;
    uint64_t window = booth_recode_w7(((uint64_t)bytes[0] << 1) & 0xff);
    size_t index = 7;
    if ((window >> 1) != 0) {
        const affine *entry = &table->points[(window >> 1) - 1];
        memcpy(out->X, entry->X, sizeof(out->X));
        memcpy(out->Y, entry->Y, sizeof(out->Y));
        memcpy(out->Z, ONE_MONT, sizeof(out->Z));
    } else {
        memset(out, 0, sizeof(*out));
    }
    if ((window & 1) == 1) CCryptoBoringSSL_ecp_nistz256_neg(out->Y, out->Y);
    for (int i = 1; i < 37; i++) {
        size_t offset = (index - 1) / 8;
        uint64_t bits = (uint64_t)bytes[offset] | (uint64_t)bytes[offset + 1] << 8;
        window = booth_recode_w7((bits >> ((index - 1) % 8)) & 0xff);
        index += 7;
        if ((window >> 1) == 0) continue;
        affine entry = table->points[i * 64 + (window >> 1) - 1];
        if ((window & 1) == 1) CCryptoBoringSSL_ecp_nistz256_neg(entry.Y, entry.Y);
        point_add_affine(out, out, &entry);
    }
}

int cp256_verify(const cp256_table *generator, const cp256_table *key, const uint8_t digest[32], const uint8_t signature[64]) {
    limb r[4], s[4], e[4];
    from_big_endian(r, signature);
    from_big_endian(s, signature + 32);
    from_big_endian(e, digest);
    // ecdsa_verify_fixed: r and s in [1, N-1]; the digest as a scalar, reduced once.
    if (is_zero(r) || !less_than(r, N) || is_zero(s) || !less_than(s, N)) return 0;
    if (!less_than(e, N)) subtract(e, e, N);
    limb s_inverse[4], u1[4], u2[4];
    if (!CCryptoBoringSSL_beeu_mod_inverse_vartime(s_inverse, s, N)) return 0;
    ord_mul_mont(s_inverse, s_inverse, RR_N);  // into the Montgomery domain, so the products are plain
    ord_mul_mont(u1, e, s_inverse);
    ord_mul_mont(u2, r, s_inverse);
    point sum, product;
    evaluate(&sum, generator, u1);
    evaluate(&product, key, u2);
    point_add(&sum, &sum, &product);
    // ecp_nistz256_cmp_x_coordinate: X/Z^2 against r, and against r + N when that is below P.
    if (is_zero(sum.Z)) return 0;
    limb z2[4], r_z2[4], x[4];
    mul_mont(z2, sum.Z, sum.Z);
    mul_mont(r_z2, r, z2);
    mul_mont(x, sum.X, ONE);
    if (equal(r_z2, x)) return 1;
    limb r_plus_n[4];
    if (add(r_plus_n, r, N) == 0 && less_than(r_plus_n, P)) {
        mul_mont(r_z2, r_plus_n, z2);
        if (equal(r_z2, x)) return 1;
    }
    return 0;
}

#else

struct cp256_table {
    int unused;
};
int cp256_available(void) { return 0; }
cp256_table *cp256_table_new(const uint8_t x963[65]) {
    (void)x963;
    return NULL;
}
void cp256_table_free(cp256_table *table) { (void)table; }
int cp256_verify(const cp256_table *generator, const cp256_table *key, const uint8_t digest[32], const uint8_t signature[64]) {
    (void)generator;
    (void)key;
    (void)digest;
    (void)signature;
    return 0;
}

#endif
