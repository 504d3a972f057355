/* The RSA key generator (rsa-keygen.c), free of N-API so that its test driver builds it alone. */
#ifndef PLATFORM_CA_NATIVE_RSA_KEYGEN_H
#define PLATFORM_CA_NATIVE_RSA_KEYGEN_H

#include <stddef.h>

#define RSA_KEY_PARTS 8
#define RSA_MIN_BITS 2048
#define RSA_MAX_BITS 8192

/* A key's components, big-endian magnitudes in OpenSSL-allocated memory: n, e, d, p, q, dp, dq, qi. */
typedef struct {
  unsigned char *part[RSA_KEY_PARTS];
  int len[RSA_KEY_PARTS];
} rsa_key_parts;

/* Generates a key of `bits` (2048–8192, a multiple of 8) with e = 65537 into a zeroed `out`: 1, or 0 (out left empty). */
int rsa_generate_key(int bits, rsa_key_parts *out);
/* Clears and frees the components. */
void rsa_key_parts_clear(rsa_key_parts *k);
/* The generator's Miller-Rabin test (base 2, then `rounds` random bases): 1 probably prime, 0 composite, -1 error. */
int rsa_is_probable_prime(const unsigned char *bytes, size_t len, int rounds);

#endif
