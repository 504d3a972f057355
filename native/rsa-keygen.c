/*
 * RSA key generation (e = 65537) with OpenSSL's BIGNUM arithmetic and CSPRNG; rsa-keygen-async.c runs it on the
 * libuv pool for JavaScript, test/native/rsa-keygen-driver.c under the sanitizers.
 *
 * OpenSSL 3.0's RSA generator (what node's generateKeyPair("rsa") runs) tests each 1024-bit candidate with 64
 * Miller-Rabin rounds and searches with a small sieve: ~120 ms of CPU per RSA-2048 key. Here the primes are random
 * probable primes in the FIPS 186-5 sense: a random odd start with its top two bits set (so p > √2·2^(bits−1) and n
 * has exactly nlen bits), an incremental search sieved by the first 2048 odd primes (and by p ≡ 1 mod e, so that
 * gcd(e, p−1) = 1), then Miller-Rabin with base 2 followed by the number of random-base rounds that FIPS 186-5
 * Table B.1 ("Minimum number of rounds of M-R testing", RSA primes p and q) gives in its stricter column:
 *
 *   prime size (nlen)        error ≤ 2^-100   stricter column       rounds used here
 *   1024 bits (RSA-2048)     4                5  (2^-112)           5 (every size below 1536 bits)
 *   1536 bits (RSA-3072)     3                4  (2^-128)           4
 *   2048 bits (RSA-4096)     2                4  (2^-144)           4 (every size from 1536 bits up)
 *
 * The error bound only falls as the primes grow, so a size between two rows takes the rounds of the row below it.
 * FIPS 186-5 draws a fresh candidate after each failure; stepping from one random start instead (PRIMEINC, analysed by
 * Brandt and Damgård, CRYPTO '92; OpenSSL 1.1 and Go search this way too) saves a random draw and a full trial
 * division per candidate, and the base-2 round before the table's rounds is a margin for the table's bounds having
 * been derived for independent candidates. The key then meets FIPS 186-5's conditions: |p − q| > 2^(nlen/2 − 100),
 * d = e^-1 mod lcm(p−1, q−1) (the smallest private exponent, as OpenSSL 3 computes it) with d > 2^(nlen/2);
 * otherwise the pair is drawn again. The final exponent and CRT values are computed with BN_FLG_CONSTTIME on the
 * secret numbers, the Miller-Rabin exponentiations too, and every secret number is cleared when freed.
 */
#include "rsa-keygen.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>

#define SIEVE_PRIMES 2048
#define SIEVE_LIMIT 18000 /* above the 2049th prime, 17881 */
#define MAX_STEP (1u << 20) /* a start this far from any prime is dropped for a new one */
#define RSA_E 65537u

static uint16_t small_primes[SIEVE_PRIMES]; /* 3, 5, 7, …: the first odd primes */
static pthread_once_t primes_once = PTHREAD_ONCE_INIT;

static void fill_small_primes(void) {
  static unsigned char composite[SIEVE_LIMIT];
  int count = 0;
  for (int i = 3; i < SIEVE_LIMIT && count < SIEVE_PRIMES; i += 2) {
    if (composite[i]) continue;
    small_primes[count++] = (uint16_t)i;
    for (int j = i * i; j < SIEVE_LIMIT; j += 2 * i) composite[j] = 1;
  }
}

/* FIPS 186-5 Table B.1, stricter column (see the header). */
static int table_rounds(int prime_bits) { return prime_bits < 1536 ? 5 : 4; }

/*
 * Miller-Rabin on odd w ≥ 5: one round with base 2 when base_two, then `rounds` rounds with bases drawn uniformly
 * from [2, w−2]. 1 probably prime, 0 composite, -1 on an OpenSSL failure. The exponentiation runs in constant time
 * (the candidate that passes is a secret prime).
 */
static int miller_rabin(const BIGNUM *w_in, int rounds, int base_two, BN_CTX *ctx) {
  int result = -1, a = 0;
  BN_MONT_CTX *mont = NULL;
  BN_CTX_start(ctx);
  BIGNUM *w = BN_CTX_get(ctx), *w1 = BN_CTX_get(ctx), *m = BN_CTX_get(ctx), *range = BN_CTX_get(ctx);
  BIGNUM *b = BN_CTX_get(ctx), *z = BN_CTX_get(ctx);
  if (z == NULL || BN_copy(w, w_in) == NULL || !BN_sub(w1, w, BN_value_one()) || !BN_sub(range, w, BN_value_one())) goto end;
  if (!BN_sub_word(range, 2)) goto end; /* w − 3: bases are 2 + [0, w − 3) */
  while (!BN_is_bit_set(w1, a)) a++;
  if (!BN_rshift(m, w1, a)) goto end;
  BN_set_flags(w, BN_FLG_CONSTTIME);
  BN_set_flags(m, BN_FLG_CONSTTIME);
  if ((mont = BN_MONT_CTX_new()) == NULL || !BN_MONT_CTX_set(mont, w, ctx)) goto end;
  result = 1;
  for (int i = base_two ? -1 : 0; i < rounds && result == 1; i++) {
    if (i < 0 ? !BN_set_word(b, 2) : (!BN_rand_range_ex(b, range, 0, ctx) || !BN_add_word(b, 2))) { result = -1; break; }
    if (!BN_mod_exp_mont(z, b, m, w, ctx, mont)) { result = -1; break; }
    if (BN_is_one(z) || BN_cmp(z, w1) == 0) continue;
    result = 0; /* composite unless a square reaches w − 1 before 1 */
    for (int j = 1; j < a; j++) {
      if (!BN_mod_sqr(z, z, w, ctx)) { result = -1; break; }
      if (BN_cmp(z, w1) == 0) { result = 1; break; }
      if (BN_is_one(z)) break;
    }
  }
end:
  BN_MONT_CTX_free(mont);
  BN_CTX_end(ctx);
  return result;
}

/*
 * A random probable prime of exactly `bits` bits into p, with p ≥ 1.5·2^(bits−1) (so that p·q has exactly twice the
 * bits) and p ≢ 1 (mod 65537). 1 on success, 0 on an OpenSSL failure.
 */
static int find_prime(BIGNUM *p, int bits, BN_CTX *ctx) {
  uint16_t residues[SIEVE_PRIMES];
  BN_ULONG residue_e;
  int found = 0;
  BN_CTX_start(ctx);
  BIGNUM *start = BN_CTX_get(ctx);
  if (start == NULL) goto end;
  while (!found) {
    if (!BN_priv_rand_ex(start, bits, BN_RAND_TOP_TWO, BN_RAND_BOTTOM_ODD, 0, ctx)) goto end;
    for (int i = 0; i < SIEVE_PRIMES; i++) {
      BN_ULONG r = BN_mod_word(start, small_primes[i]);
      if (r == (BN_ULONG)-1) goto end;
      residues[i] = (uint16_t)r;
    }
    if ((residue_e = BN_mod_word(start, RSA_E)) == (BN_ULONG)-1) goto end;
    for (uint32_t step = 0; step < MAX_STEP && !found; step += 2) {
      int i = 0;
      while (i < SIEVE_PRIMES && (residues[i] + step) % small_primes[i] != 0) i++;
      if (i < SIEVE_PRIMES || (residue_e + step) % RSA_E == 1) continue;
      if (BN_copy(p, start) == NULL || !BN_add_word(p, step)) goto end;
      if (BN_num_bits(p) != bits) break; /* ran past the top: draw a new start */
      int verdict = miller_rabin(p, table_rounds(bits), 1, ctx);
      if (verdict < 0) goto end;
      found = verdict;
    }
  }
end:
  OPENSSL_cleanse(residues, sizeof(residues));
  BN_CTX_end(ctx);
  return found;
}

int rsa_generate_key(int bits, rsa_key_parts *out) {
  int ok = 0, half = bits / 2;
  if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS || bits % 8 != 0) return 0;
  pthread_once(&primes_once, fill_small_primes);
  BN_CTX *ctx = BN_CTX_secure_new();
  BIGNUM *v[RSA_KEY_PARTS] = {0}; /* n, e, d, p, q, dp, dq, qi */
  BIGNUM *p1 = BN_secure_new(), *q1 = BN_secure_new(), *lcm = BN_secure_new(), *gcd = BN_secure_new(), *t = BN_new();
  for (int i = 0; i < RSA_KEY_PARTS; i++) v[i] = BN_secure_new();
  BIGNUM *n = v[0], *e = v[1], *d = v[2], *p = v[3], *q = v[4], *dp = v[5], *dq = v[6], *qi = v[7];
  int allocated = ctx != NULL && p1 != NULL && q1 != NULL && lcm != NULL && gcd != NULL && t != NULL;
  for (int i = 0; i < RSA_KEY_PARTS; i++) allocated = allocated && v[i] != NULL;
  if (!allocated || !BN_set_word(e, RSA_E)) goto end;
  for (int i = 2; i < RSA_KEY_PARTS; i++) BN_set_flags(v[i], BN_FLG_CONSTTIME);
  BN_set_flags(p1, BN_FLG_CONSTTIME);
  BN_set_flags(q1, BN_FLG_CONSTTIME);
  BN_set_flags(lcm, BN_FLG_CONSTTIME);
  for (int attempt = 0; attempt < 100 && !ok; attempt++) {
    if (!find_prime(p, half, ctx) || !find_prime(q, bits - half, ctx)) goto end;
    /* |p − q| > 2^(nlen/2 − 100), which also makes p ≠ q. */
    if (!BN_sub(t, p, q)) goto end;
    BN_set_negative(t, 0);
    if (BN_num_bits(t) <= half - 99) continue;
    if (BN_cmp(p, q) < 0) BN_swap(p, q); /* p > q, as OpenSSL orders them */
    if (!BN_mul(n, p, q, ctx) || BN_num_bits(n) != bits) continue;
    if (!BN_sub(p1, p, BN_value_one()) || !BN_sub(q1, q, BN_value_one())) goto end;
    if (!BN_gcd(gcd, p1, q1, ctx) || !BN_mul(t, p1, q1, ctx) || !BN_div(lcm, NULL, t, gcd, ctx)) goto end;
    if (BN_mod_inverse(d, e, lcm, ctx) == NULL) continue;
    /* d > 2^(nlen/2): a small d would be an easy target for lattice attacks. */
    BN_zero(t);
    if (!BN_set_bit(t, half) || BN_cmp(d, t) <= 0) continue;
    if (!BN_mod(dp, d, p1, ctx) || !BN_mod(dq, d, q1, ctx) || BN_mod_inverse(qi, q, p, ctx) == NULL) goto end;
    ok = 1;
  }
  for (int i = 0; ok && i < RSA_KEY_PARTS; i++) {
    out->len[i] = BN_num_bytes(v[i]);
    out->part[i] = OPENSSL_malloc(out->len[i] > 0 ? out->len[i] : 1);
    if (out->part[i] == NULL || BN_bn2bin(v[i], out->part[i]) != out->len[i]) ok = 0;
  }
end:
  for (int i = 0; i < RSA_KEY_PARTS; i++) BN_clear_free(v[i]);
  BN_clear_free(p1);
  BN_clear_free(q1);
  BN_clear_free(lcm);
  BN_clear_free(gcd);
  BN_clear_free(t);
  BN_CTX_free(ctx);
  if (!ok) rsa_key_parts_clear(out);
  return ok;
}

void rsa_key_parts_clear(rsa_key_parts *k) {
  for (int i = 0; i < RSA_KEY_PARTS; i++) {
    if (k->part[i] != NULL) OPENSSL_clear_free(k->part[i], k->len[i] > 0 ? k->len[i] : 1);
    k->part[i] = NULL;
    k->len[i] = 0;
  }
}

int rsa_is_probable_prime(const unsigned char *bytes, size_t len, int rounds) {
  int verdict = -1;
  if (len > RSA_MAX_BITS / 4 || rounds < 0 || rounds > 1000) return -1;
  BN_CTX *ctx = BN_CTX_new();
  BIGNUM *w = BN_bin2bn(bytes, (int)len, NULL);
  if (ctx != NULL && w != NULL) {
    if (BN_cmp(w, BN_value_one()) <= 0) verdict = 0;
    else if (BN_is_word(w, 2) || BN_is_word(w, 3)) verdict = 1;
    else if (!BN_is_odd(w)) verdict = 0;
    else verdict = miller_rabin(w, rounds, 1, ctx);
  }
  BN_free(w);
  BN_CTX_free(ctx);
  return verdict;
}
