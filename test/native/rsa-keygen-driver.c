/*
 * Test driver for native/rsa-keygen.c, built with AddressSanitizer and UBSan (and plain, for valgrind's leak check)
 * by test/native/rsa-keygen-c.test.ts. `keys BITS COUNT` prints COUNT keys, one a line: n e d p q dp dq qi in hex.
 * `primes ROUNDS` reads hexadecimal numbers, one a line, and prints one character for each: '1' probably prime,
 * '0' composite, '-' refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../native/rsa-keygen.h"

static int hex_digit(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

static int keys(int bits, int count) {
  for (int k = 0; k < count; k++) {
    rsa_key_parts parts;
    memset(&parts, 0, sizeof(parts));
    if (!rsa_generate_key(bits, &parts)) return 1;
    for (int i = 0; i < RSA_KEY_PARTS; i++) {
      for (int j = 0; j < parts.len[i]; j++) printf("%02x", parts.part[i][j]);
      putchar(i + 1 < RSA_KEY_PARTS ? ' ' : '\n');
    }
    rsa_key_parts_clear(&parts);
  }
  return 0;
}

static int primes(int rounds) {
  static char line[4200];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    size_t digits = strcspn(line, "\r\n");
    size_t len = (digits + 1) / 2;
    unsigned char *bytes = calloc(len ? len : 1, 1); /* exactly the number's size: a read past it is a sanitizer error */
    if (bytes == NULL) return 2;
    for (size_t i = 0; i < digits; i++) {
      size_t from_end = digits - 1 - i; /* counted from the last digit: an odd count leaves the first byte's top half 0 */
      int v = hex_digit(line[i]);
      if (v < 0) return 2;
      bytes[len - 1 - from_end / 2] |= (unsigned char)(v << (4 * (from_end % 2)));
    }
    int verdict = rsa_is_probable_prime(bytes, len, rounds);
    putchar(verdict < 0 ? '-' : verdict ? '1' : '0');
    free(bytes);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "keys") == 0) return keys(atoi(argv[2]), atoi(argv[3]));
  if (argc == 3 && strcmp(argv[1], "primes") == 0) return primes(atoi(argv[2]));
  fprintf(stderr, "usage: rsa-keygen-driver keys BITS COUNT | primes ROUNDS\n");
  return 2;
}
