/*
 * Strict reader of DER PKCS#10 requests for batched issuance: the same checks as src/pki/csr.ts (csr-public-key.ts,
 * der.ts, der-values.ts, names.ts), element by element, so that nothing the JavaScript reader refuses is accepted here.
 * Every length is checked against the bytes that remain before it is used; nothing is read past `end`. What this reader
 * does not issue (Ed25519, RSASSA-PSS, compressed points, other algorithms) it answers 0 for, and the JavaScript reader
 * decides.
 */
#include "crypto.h"
#include <string.h>

typedef struct {
  const unsigned char *buf;
  size_t pos, end;
} reader;

typedef struct {
  unsigned char tag;
  size_t start, content, end;
} tlv;

/* DerReader.next: one element with a definite, minimal length of at most 4 octets, inside the reader's bounds. */
static int next(reader *r, tlv *t) {
  const unsigned char *b = r->buf;
  size_t s = r->pos, cs, len;
  if (s >= r->end || r->end - s < 2) return 0;
  if ((b[s] & 0x1f) == 0x1f) return 0;
  if (b[s + 1] < 0x80) {
    len = b[s + 1];
    cs = s + 2;
  } else {
    size_t n = b[s + 1] & 0x7f;
    if (n == 0 || n > 4 || r->end - s - 2 < n || b[s + 2] == 0) return 0;
    cs = s + 2 + n;
    len = 0;
    for (size_t i = s + 2; i < cs; i++) len = (len << 8) | b[i];
    if (len < 0x80) return 0;
  }
  if (len > r->end - cs) return 0;
  t->tag = b[s];
  t->start = s;
  t->content = cs;
  t->end = cs + len;
  r->pos = t->end;
  return 1;
}

static int expect(reader *r, unsigned char tag, tlv *t) {
  return next(r, t) && t->tag == tag;
}

static reader child(const reader *r, const tlv *t) {
  reader c = {r->buf, t->content, t->end};
  return c;
}

static int more(const reader *r) {
  return r->pos < r->end;
}

static span whole(const reader *r, const tlv *t) {
  span s = {r->buf + t->start, t->end - t->start};
  return s;
}

static span contents(const reader *r, const tlv *t) {
  span s = {r->buf + t->content, t->end - t->content};
  return s;
}

/* decodeOid's checks: not empty, no sub-identifier starting with 0x80, the last octet ends a sub-identifier. */
static int oid_ok(const unsigned char *p, size_t len) {
  if (len == 0 || (p[len - 1] & 0x80)) return 0;
  int at_start = 1;
  for (size_t i = 0; i < len; i++) {
    if (at_start && p[i] == 0x80) return 0;
    at_start = (p[i] & 0x80) == 0;
  }
  return 1;
}

static int read_oid(reader *r, span *oid) {
  tlv t;
  if (!expect(r, 0x06, &t) || !oid_ok(r->buf + t.content, t.end - t.content)) return 0;
  *oid = whole(r, &t);
  return 1;
}

static int is_oid(span oid, const unsigned char *want, size_t want_len) {
  return oid.len == want_len && memcmp(oid.p, want, want_len) == 0;
}
#define IS_OID(s, lit) is_oid((s), (const unsigned char *)(lit), sizeof(lit) - 1)

/* AlgorithmIdentifier: OID and at most one parameters element. params.len 0 when absent. */
static int read_algorithm(reader *r, span *oid, span *params) {
  tlv t, p;
  if (!expect(r, 0x30, &t)) return 0;
  reader a = child(r, &t);
  if (!read_oid(&a, oid)) return 0;
  params->p = NULL;
  params->len = 0;
  if (more(&a)) {
    if (!next(&a, &p)) return 0;
    *params = whole(&a, &p);
  }
  return !more(&a);
}

/* A BIT STRING whose unused-bits octet is 0 (the only form csr.ts accepts for keys and signatures). */
static int read_bits(reader *r, span *bits) {
  tlv t;
  if (!expect(r, 0x03, &t) || t.end == t.content || r->buf[t.content] != 0) return 0;
  bits->p = r->buf + t.content + 1;
  bits->len = t.end - t.content - 1;
  return 1;
}

/* ---- strings (der-values.ts decodeString) ---- */

static int printable(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ' ' || (c >= 0x27 && c <= 0x29) ||
         (c >= 0x2b && c <= 0x2f) || c == ':' || c == '=' || c == '?' || c == '*' || c == '&';
}

/* UTF-8 as TextDecoder("utf-8", { fatal: true }) accepts it: no overlong forms, surrogates or code points above U+10FFFF. */
static int utf8_ok(const unsigned char *p, size_t len) {
  size_t i = 0;
  while (i < len) {
    unsigned char c = p[i];
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else return 0;
    if (len - i - 1 < n) return 0;
    if (p[i + 1] < lo || p[i + 1] > hi) return 0;
    for (size_t k = 2; k <= n; k++)
      if (p[i + k] < 0x80 || p[i + k] > 0xbf) return 0;
    i += n + 1;
  }
  return 1;
}

static int universal_ok(const unsigned char *p, size_t len) {
  if (len % 4) return 0;
  for (size_t i = 0; i < len; i += 4) {
    unsigned long cp = (unsigned long)p[i] << 24 | (unsigned long)p[i + 1] << 16 | (unsigned long)p[i + 2] << 8 | p[i + 3];
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  }
  return 1;
}

/* A BMPString OpenSSL reads back in a certificate: UCS-2, no surrogate code units (names.ts checkIssuable). */
static int ucs2_ok(const unsigned char *p, size_t len) {
  if (len % 2) return 0;
  for (size_t i = 0; i < len; i += 2)
    if ((p[i] & 0xf8) == 0xd8) return 0;
  return 1;
}

/*
 * 1 when the value is a string type decodeString accepts or not a string type at all (names.ts writes those as hex),
 * and one OpenSSL reads back once copied into a certificate: no VisibleString, no surrogates in a BMPString.
 */
static int name_value_ok(unsigned char tag, const unsigned char *p, size_t len) {
  size_t i;
  switch (tag) {
    case 0x0c: return utf8_ok(p, len);
    case 0x13: for (i = 0; i < len; i++) if (!printable(p[i])) return 0; return 1;
    case 0x16: for (i = 0; i < len; i++) if (p[i] >= 0x80) return 0; return 1;
    case 0x12: for (i = 0; i < len; i++) if (p[i] != ' ' && (p[i] < '0' || p[i] > '9')) return 0; return 1;
    case 0x1a: return 0; /* VisibleString: OpenSSL cannot read it back in a certificate */
    case 0x14: return 1; /* T61String, read as Latin-1 */
    case 0x1e: return ucs2_ok(p, len);
    case 0x1c: return universal_ok(p, len);
    default: return 1;
  }
}

/* names.ts readName: SEQUENCE OF non-empty SET OF SEQUENCE { OID, one value }. */
static int read_name(reader *r, span *name) {
  tlv t, set_t, atv_t, v;
  span oid;
  if (!expect(r, 0x30, &t)) return 0;
  reader seq = child(r, &t);
  while (more(&seq)) {
    if (!expect(&seq, 0x31, &set_t) || set_t.end == set_t.content) return 0;
    reader set = child(&seq, &set_t);
    while (more(&set)) {
      if (!expect(&set, 0x30, &atv_t)) return 0;
      reader atv = child(&set, &atv_t);
      if (!read_oid(&atv, &oid) || !next(&atv, &v) || more(&atv)) return 0;
      if (!name_value_ok(v.tag, atv.buf + v.content, v.end - v.content)) return 0;
    }
  }
  *name = whole(r, &t);
  return 1;
}

/* ---- public key ---- */

static const unsigned char DER_NULL[] = {0x05, 0x00};

static int null_or_absent(span params) {
  return params.len == 0 || (params.len == 2 && memcmp(params.p, DER_NULL, 2) == 0);
}

/* DerReader.unsignedInteger: minimal, non-negative; the magnitude without its sign octet. */
static int read_unsigned(reader *r, span *out) {
  tlv t;
  if (!expect(r, 0x02, &t) || t.end == t.content) return 0;
  const unsigned char *p = r->buf + t.content;
  size_t len = t.end - t.content;
  if (len > 1 && ((p[0] == 0 && p[1] < 0x80) || (p[0] == 0xff && p[1] >= 0x80))) return 0;
  if (p[0] >= 0x80) return 0;
  if (p[0] == 0 && len > 1) {
    p++;
    len--;
  }
  out->p = p;
  out->len = len;
  return 1;
}

static size_t bit_length(span m) {
  if (m.len == 0 || (m.len == 1 && m.p[0] == 0)) return 0;
  size_t bits = (m.len - 1) * 8;
  for (unsigned char c = m.p[0]; c; c >>= 1) bits++;
  return bits;
}

static int read_rsa_key(span key_bits, csr_fields *f) {
  tlv t;
  reader outer = {key_bits.p, 0, key_bits.len};
  if (!expect(&outer, 0x30, &t) || more(&outer)) return 0;
  reader rsa = child(&outer, &t);
  if (!read_unsigned(&rsa, &f->rsa_n) || !read_unsigned(&rsa, &f->rsa_e) || more(&rsa)) return 0;
  size_t n_bits = bit_length(f->rsa_n), e_bits = bit_length(f->rsa_e);
  if (n_bits < 2048 || n_bits > 8192 || (f->rsa_n.p[f->rsa_n.len - 1] & 1) == 0) return 0;
  if ((f->rsa_e.p[f->rsa_e.len - 1] & 1) == 0 || e_bits < 2 || f->rsa_e.len > 8) return 0;
  f->key_kind = KEY_RSA;
  return 1;
}

#define OID_RSA "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01"
#define OID_EC "\x06\x07\x2a\x86\x48\xce\x3d\x02\x01"
#define OID_P256 "\x06\x08\x2a\x86\x48\xce\x3d\x03\x01\x07"
#define OID_P384 "\x06\x05\x2b\x81\x04\x00\x22"
#define OID_P521 "\x06\x05\x2b\x81\x04\x00\x23"

static int read_public_key(reader *r, csr_fields *f) {
  tlv t;
  span oid, params;
  if (!expect(r, 0x30, &t)) return 0;
  f->spki = whole(r, &t);
  reader spki = child(r, &t);
  if (!read_algorithm(&spki, &oid, &params) || !read_bits(&spki, &f->key_bits) || more(&spki)) return 0;
  if (IS_OID(oid, OID_RSA)) return null_or_absent(params) && read_rsa_key(f->key_bits, f);
  if (!IS_OID(oid, OID_EC)) return 0;
  size_t size;
  if (IS_OID(params, OID_P256)) f->curve_bits = 256, size = 32;
  else if (IS_OID(params, OID_P384)) f->curve_bits = 384, size = 48;
  else if (IS_OID(params, OID_P521)) f->curve_bits = 521, size = 66;
  else return 0;
  /* Only the uncompressed form; compressed points go through node:crypto in the JavaScript path. */
  if (f->key_bits.len != 1 + 2 * size || f->key_bits.p[0] != 0x04) return 0;
  f->key_kind = KEY_EC;
  return 1;
}

/* ---- attributes and extensions ---- */

#define OID_EXT_REQ "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x09\x0e"
#define OID_MS_EXT_REQ "\x06\x0a\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x0e"
#define OID_SAN "\x06\x03\x55\x1d\x11"
#define MAX_EXTENSIONS 64

int csr_next_extension(span *rest, csr_extension *out) {
  tlv t, b, v, inner;
  reader list = {rest->p, 0, rest->len};
  if (!more(&list) || !expect(&list, 0x30, &t)) return 0;
  reader ext = child(&list, &t);
  if (!read_oid(&ext, &out->oid)) return 0;
  out->critical = 0;
  if (more(&ext) && ext.buf[ext.pos] == 0x01) {
    if (!next(&ext, &b) || b.end - b.content != 1 || (ext.buf[b.content] != 0 && ext.buf[b.content] != 0xff)) return 0;
    out->critical = ext.buf[b.content] == 0xff;
  }
  if (!expect(&ext, 0x04, &v) || more(&ext)) return 0;
  /* The value may be copied into a certificate verbatim: exactly one well-formed element. */
  reader value = child(&ext, &v);
  if (!next(&value, &inner) || more(&value)) return 0;
  out->value = contents(&ext, &v);
  rest->p += list.pos;
  rest->len -= list.pos;
  return 1;
}

/* names.ts readGeneralNames: a non-empty SEQUENCE of known GeneralName tags; rfc822/dNS/URI IA5, IP 4 or 16 octets. */
static int sans_ok(span value) {
  tlv t, e;
  reader r = {value.p, 0, value.len};
  if (!expect(&r, 0x30, &t) || more(&r) || t.end == t.content) return 0;
  reader seq = child(&r, &t);
  while (more(&seq)) {
    if (!next(&seq, &e)) return 0;
    size_t len = e.end - e.content;
    switch (e.tag) {
      case 0x81: case 0x82: case 0x86:
        for (size_t i = e.content; i < e.end; i++) if (seq.buf[i] >= 0x80) return 0;
        break;
      case 0x87:
        if (len != 4 && len != 16) return 0;
        break;
      case 0xa0: case 0xa3: case 0xa4: case 0xa5: case 0x88:
        break;
      default:
        return 0;
    }
  }
  return 1;
}

static int read_extensions(span list, csr_fields *f) {
  span seen[MAX_EXTENSIONS];
  size_t count = 0;
  csr_extension e;
  span rest = list;
  while (rest.len > 0) {
    if (!csr_next_extension(&rest, &e) || count == MAX_EXTENSIONS) return 0;
    for (size_t i = 0; i < count; i++)
      if (seen[i].len == e.oid.len && memcmp(seen[i].p, e.oid.p, e.oid.len) == 0) return 0;
    seen[count++] = e.oid;
    if (IS_OID(e.oid, OID_SAN) && !sans_ok(e.value)) return 0;
  }
  f->extensions = list;
  return 1;
}

static int read_attributes(reader *attrs, csr_fields *f) {
  tlv t, values_t, list_t;
  span oid;
  int seen = 0;
  while (more(attrs)) {
    if (!expect(attrs, 0x30, &t)) return 0;
    reader attr = child(attrs, &t);
    if (!read_oid(&attr, &oid) || !expect(&attr, 0x31, &values_t) || more(&attr)) return 0;
    if (!IS_OID(oid, OID_EXT_REQ) && !IS_OID(oid, OID_MS_EXT_REQ)) continue;
    if (seen++) return 0;
    reader values = child(&attr, &values_t);
    if (!expect(&values, 0x30, &list_t) || more(&values)) return 0;
    if (!read_extensions(contents(&values, &list_t), f)) return 0;
  }
  return 1;
}

/* ---- the request ---- */

#define OID_SHA256_RSA "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x0b"
#define OID_SHA384_RSA "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x0c"
#define OID_SHA512_RSA "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x0d"
#define OID_ECDSA_SHA256 "\x06\x08\x2a\x86\x48\xce\x3d\x04\x03\x02"
#define OID_ECDSA_SHA384 "\x06\x08\x2a\x86\x48\xce\x3d\x04\x03\x03"
#define OID_ECDSA_SHA512 "\x06\x08\x2a\x86\x48\xce\x3d\x04\x03\x04"

/* csr.ts signatureCheck for the algorithms issued here: the key must match; RSA NULL or no parameters, ECDSA none. */
static int signature_algorithm(span oid, span params, csr_fields *f) {
  int rsa = 0;
  if (IS_OID(oid, OID_SHA256_RSA)) rsa = 1, f->hash_bits = 256;
  else if (IS_OID(oid, OID_SHA384_RSA)) rsa = 1, f->hash_bits = 384;
  else if (IS_OID(oid, OID_SHA512_RSA)) rsa = 1, f->hash_bits = 512;
  else if (IS_OID(oid, OID_ECDSA_SHA256)) f->hash_bits = 256;
  else if (IS_OID(oid, OID_ECDSA_SHA384)) f->hash_bits = 384;
  else if (IS_OID(oid, OID_ECDSA_SHA512)) f->hash_bits = 512;
  else return 0;
  if (rsa) return f->key_kind == KEY_RSA && null_or_absent(params);
  return f->key_kind == KEY_EC && params.len == 0;
}

int csr_read(const unsigned char *der, size_t len, csr_fields *f) {
  tlv t, info_t, version, attrs_t;
  span sig_oid, sig_params;
  memset(f, 0, sizeof(*f));
  if (der == NULL || len == 0 || len > 64 * 1024 || der[0] != 0x30) return 0;
  reader top = {der, 0, len};
  if (!expect(&top, 0x30, &t) || more(&top)) return 0;
  reader csr = child(&top, &t);
  if (!expect(&csr, 0x30, &info_t)) return 0;
  if (!read_algorithm(&csr, &sig_oid, &sig_params) || !read_bits(&csr, &f->signature) || more(&csr)) return 0;
  f->info = whole(&csr, &info_t);
  reader info = child(&csr, &info_t);
  /* version INTEGER 0: minimal DER leaves exactly one encoding. */
  if (!expect(&info, 0x02, &version) || version.end - version.content != 1 || der[version.content] != 0) return 0;
  if (!read_name(&info, &f->subject) || !read_public_key(&info, f)) return 0;
  if (more(&info)) {
    if (!expect(&info, 0xa0, &attrs_t) || more(&info)) return 0;
    reader attrs = child(&info, &attrs_t);
    if (!read_attributes(&attrs, f)) return 0;
  }
  return signature_algorithm(sig_oid, sig_params, f);
}
