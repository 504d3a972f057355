/*
 * Test driver for native/csr.c, built with AddressSanitizer and UBSan by test/native/csr-reader.test.ts: reads records
 * (u32 little-endian length, then the bytes) from stdin, copies each into a buffer of exactly that size (so a read
 * past the request is a sanitizer error), runs csr_read and walks the extensions it found, and writes one character
 * per record: '1' read, '0' refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../native/crypto.h"

int main(void) {
  unsigned char head[4];
  while (fread(head, 1, 4, stdin) == 4) {
    size_t len = (size_t)head[0] | (size_t)head[1] << 8 | (size_t)head[2] << 16 | (size_t)head[3] << 24;
    unsigned char *der = malloc(len ? len : 1);
    if (der == NULL || fread(der, 1, len, stdin) != len) return 2;
    csr_fields f;
    int ok = csr_read(der, len, &f);
    if (ok) {
      csr_extension e;
      span rest = f.extensions;
      while (rest.len > 0 && csr_next_extension(&rest, &e)) {
      }
      if (rest.len != 0) ok = 0; /* the walk issuance does must read every extension the reader accepted */
    }
    putchar(ok ? '1' : '0');
    free(der);
  }
  return 0;
}
