/*
 * issueBatch: a batch of DER CSRs read (csr.c), their self-signatures checked, and each issued as a certificate from
 * the per-CA template src/pki/native-issue.ts packs from the same pieces src/pki/issue.ts assembles, signed with the CA
 * key signingKey holds, all in one call: the JavaScript around two OpenSSL operations per certificate (DER reading,
 * name decoding, TBS assembly, SHA-1 key identifier, PEM) was a fifth of a P-256 certificate's CPU.
 *
 * A job this call does not issue (not read, not of a kind read here, not verified) comes back empty; the caller then
 * runs the JavaScript path for it, which refuses it with its precise error or issues it.
 */
#include "crypto.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/sha.h>

/* Template: seven little-endian u32 then the bytes they measure (packed by src/pki/native-issue.ts). */
enum { T_HASH, T_FLAGS, T_ALG, T_MIDDLE, T_HEAD, T_TAIL, T_ALLOW, T_FIELDS };
#define FLAG_INCLUDE_SANS 1u
#define NO_TEMPLATE 0xffff

typedef struct {
  signing_key *key;
  int hash_bits;
  int include_sans;
  span alg, middle, head, tail, allow;
} template;

typedef struct {
  unsigned char *p;
  size_t len, cap;
} growable;

static int reserve(growable *g, size_t more) {
  if (g->cap - g->len >= more) return 1;
  size_t cap = g->cap ? g->cap : 4096;
  while (cap - g->len < more) {
    if (cap > ((size_t)1 << 40)) return 0;
    cap *= 2;
  }
  unsigned char *p = realloc(g->p, cap);
  if (p == NULL) return 0;
  g->p = p;
  g->cap = cap;
  return 1;
}

static size_t header_len(size_t n) {
  return n < 0x80 ? 2 : n < 0x100 ? 3 : n < 0x10000 ? 4 : n < 0x1000000 ? 5 : 6;
}

static unsigned char *put_header(unsigned char *at, unsigned char tag, size_t n) {
  size_t h = header_len(n);
  *at++ = tag;
  if (h == 2) {
    *at++ = (unsigned char)n;
    return at;
  }
  *at++ = (unsigned char)(0x80 | (h - 2));
  for (size_t i = h - 2; i > 0; i--) *at++ = (unsigned char)(n >> (8 * (i - 1)));
  return at;
}

static unsigned char *put(unsigned char *at, span s) {
  memcpy(at, s.p, s.len);
  return at + s.len;
}

static uint32_t u32le(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int read_template(const unsigned char *p, size_t len, signing_key *key, template *t) {
  uint32_t f[T_FIELDS];
  if (key == NULL || len < 4 * T_FIELDS) return 0;
  for (int i = 0; i < T_FIELDS; i++) f[i] = u32le(p + 4 * i);
  size_t rest = len - 4 * T_FIELDS;
  uint64_t sum = (uint64_t)f[T_MIDDLE] + f[T_HEAD] + f[T_TAIL] + f[T_ALLOW];
  if (sum != rest || f[T_ALG] > f[T_MIDDLE] || f[T_ALG] == 0) return 0;
  const unsigned char *at = p + 4 * T_FIELDS;
  t->key = key;
  t->hash_bits = (int)f[T_HASH];
  t->include_sans = (f[T_FLAGS] & FLAG_INCLUDE_SANS) != 0;
  t->middle = (span){at, f[T_MIDDLE]};
  t->alg = (span){at, f[T_ALG]};
  t->head = (span){at += f[T_MIDDLE], f[T_HEAD]};
  t->tail = (span){at += f[T_HEAD], f[T_TAIL]};
  t->allow = (span){at + f[T_TAIL], f[T_ALLOW]};
  return 1;
}

/* Whether an extension OID (TLV) is in the template's list of OIDs copied from requests (short-form OID TLVs). */
static int allowed(span allow, span oid) {
  size_t at = 0;
  while (allow.len - at >= 2) {
    size_t n = 2 + (size_t)allow.p[at + 1];
    if (allow.p[at + 1] >= 0x80 || n > allow.len - at) return 0;
    if (n == oid.len && memcmp(allow.p + at, oid.p, n) == 0) return 1;
    at += n;
  }
  return 0;
}

#define OID_SAN "\x06\x03\x55\x1d\x11"
static const unsigned char CRITICAL[] = {0x01, 0x01, 0xff};
static const unsigned char VERSION_V3[] = {0xa0, 0x03, 0x02, 0x01, 0x02};
/* SubjectKeyIdentifier extension up to the 20 octets of the SHA-1: SEQUENCE { OID 2.5.29.14, OCTET STRING { OCTET STRING } }. */
static const unsigned char SKI_PREFIX[] = {0x30, 0x1d, 0x06, 0x03, 0x55, 0x1d, 0x0e, 0x04, 0x16, 0x04, 0x14};
#define SKI_LEN (sizeof(SKI_PREFIX) + SHA_DIGEST_LENGTH)
#define SERIAL_LEN 16

/* Which requested extensions go into the certificate, and with which critical flag: issue.ts tbsFor. */
static int copied(const template *t, const csr_fields *f, const csr_extension *e, int *critical) {
  if (e->oid.len == sizeof(OID_SAN) - 1 && memcmp(e->oid.p, OID_SAN, e->oid.len) == 0) {
    /* RFC 5280 §4.2.1.6: with an empty subject the SAN carries the identity and must be critical. */
    *critical = e->critical || f->subject.len == 2;
    return t->include_sans;
  }
  *critical = e->critical;
  return allowed(t->allow, e->oid);
}

static size_t extension_len(const csr_extension *e, int critical) {
  size_t content = e->oid.len + (critical ? sizeof(CRITICAL) : 0) + header_len(e->value.len) + e->value.len;
  return header_len(content) + content;
}

static unsigned char *put_extension(unsigned char *at, const csr_extension *e, int critical) {
  size_t content = e->oid.len + (critical ? sizeof(CRITICAL) : 0) + header_len(e->value.len) + e->value.len;
  at = put_header(at, 0x30, content);
  at = put(at, e->oid);
  if (critical) at = put(at, (span){CRITICAL, sizeof(CRITICAL)});
  at = put_header(at, 0x04, e->value.len);
  return put(at, e->value);
}

/* The TBSCertificate of one request into tbs: issue.ts's layout, byte for byte. Returns its length, 0 on failure. */
static size_t build_tbs(const template *t, const csr_fields *f, const unsigned char *serial, growable *tbs) {
  csr_extension e;
  int critical;
  size_t copy_len = 0;
  span rest = f->extensions;
  while (rest.len > 0 && csr_next_extension(&rest, &e))
    if (copied(t, f, &e, &critical)) copy_len += extension_len(&e, critical);
  size_t ext_len = t->head.len + SKI_LEN + t->tail.len + copy_len;
  size_t ext_seq = header_len(ext_len) + ext_len;
  size_t content = sizeof(VERSION_V3) + 2 + SERIAL_LEN + t->middle.len + f->subject.len + f->spki.len + header_len(ext_seq) + ext_seq;
  size_t total = header_len(content) + content;
  if (content > UINT32_MAX) return 0;
  tbs->len = 0;
  if (!reserve(tbs, total)) return 0;
  unsigned char *at = put_header(tbs->p, 0x30, content);
  at = put(at, (span){VERSION_V3, sizeof(VERSION_V3)});
  *at++ = 0x02;
  *at++ = SERIAL_LEN;
  at = put(at, (span){serial, SERIAL_LEN});
  at = put(at, t->middle);
  at = put(at, f->subject);
  at = put(at, f->spki);
  at = put_header(at, 0xa3, ext_seq);
  at = put_header(at, 0x30, ext_len);
  at = put(at, t->head);
  at = put(at, (span){SKI_PREFIX, sizeof(SKI_PREFIX)});
  SHA_CTX sha1;
  SHA1_Init(&sha1);
  SHA1_Update(&sha1, f->key_bits.p, f->key_bits.len);
  SHA1_Final(at, &sha1);
  at += SHA_DIGEST_LENGTH;
  at = put(at, t->tail);
  rest = f->extensions;
  while (rest.len > 0 && csr_next_extension(&rest, &e)) {
    if (!copied(t, f, &e, &critical)) continue;
    /* The same walk as the sizing one; checked all the same, so no request can make it write past `total`. */
    if (extension_len(&e, critical) > total - (size_t)(at - tbs->p)) return 0;
    at = put_extension(at, &e, critical);
  }
  return (size_t)(at - tbs->p) == total ? total : 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char PEM_BEGIN[] = "-----BEGIN CERTIFICATE-----\n";
static const char PEM_END[] = "-----END CERTIFICATE-----\n";

/* pem.ts encodePem("CERTIFICATE", der): base64 in lines of 64 characters. */
static int put_pem(growable *pem, const unsigned char *der, size_t len) {
  size_t b64 = 4 * ((len + 2) / 3);
  size_t total = sizeof(PEM_BEGIN) - 1 + b64 + (b64 + 63) / 64 + sizeof(PEM_END) - 1;
  if (!reserve(pem, total)) return 0;
  unsigned char *at = pem->p + pem->len;
  memcpy(at, PEM_BEGIN, sizeof(PEM_BEGIN) - 1);
  at += sizeof(PEM_BEGIN) - 1;
  size_t column = 0;
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)der[i] << 16 | (i + 1 < len ? (uint32_t)der[i + 1] << 8 : 0) | (i + 2 < len ? der[i + 2] : 0);
    *at++ = B64[v >> 18 & 63];
    *at++ = B64[v >> 12 & 63];
    *at++ = i + 1 < len ? B64[v >> 6 & 63] : '=';
    *at++ = i + 2 < len ? B64[v & 63] : '=';
    if ((column += 4) == 64) {
      *at++ = '\n';
      column = 0;
    }
  }
  if (column) *at++ = '\n';
  memcpy(at, PEM_END, sizeof(PEM_END) - 1);
  pem->len += total;
  return 1;
}

/* The certificate of a request read and verified, appended to der and pem; 0 when it is not issued here. */
static int issue_one(const template *t, const csr_fields *f, const unsigned char *serial, growable *tbs, growable *der, growable *pem) {
  unsigned char md[64], sig[1024];
  int md_nid = 0;
  size_t tbs_len = build_tbs(t, f, serial, tbs);
  size_t md_len = tbs_len ? digest(t->hash_bits, tbs->p, tbs_len, md, &md_nid) : 0;
  unsigned int sig_len = md_len ? sign_digest(t->key, md_nid, md, md_len, sig, sizeof(sig)) : 0;
  if (sig_len == 0) return 0;
  size_t content = tbs_len + t->alg.len + header_len(sig_len + 1) + sig_len + 1;
  size_t total = header_len(content) + content;
  if (!reserve(der, total)) return 0;
  unsigned char *start = der->p + der->len;
  unsigned char *at = put_header(start, 0x30, content);
  at = put(at, (span){tbs->p, tbs_len});
  at = put(at, t->alg);
  at = put_header(at, 0x03, sig_len + 1);
  *at++ = 0;
  at = put(at, (span){sig, sig_len});
  if (!put_pem(pem, start, total)) return 0;
  der->len += total;
  return 1;
}

#define MAX_TEMPLATES 64
/* templateIndex flag (native-issue.ts CHECKED): this process verified the request's self-signature before (its
 * verified-request memory holds these very bytes), so it is read and issued without a second check. */
#define CHECKED 0x8000u
#define SCRATCH_KEPT (1u << 20)

/* A typed array of the given element type: its data and element count. */
static int typed(napi_env env, napi_value v, napi_typedarray_type want, void **data, size_t *length) {
  bool is_typed = false;
  napi_typedarray_type type;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed) return 0;
  if (napi_get_typedarray_info(env, v, &type, length, data, NULL, NULL) != napi_ok) return 0;
  return type == want;
}

/*
 * issueBatch(keys, templates, templateIndex, csrBytes, csrEnds, serials, derEnds, pemEnds) -> ArrayBuffer | null
 *   keys[k], templates[k]: a signingKey handle and its template; job i uses templateIndex[i] (0xffff: skip the job),
 *   less the CHECKED flag, which skips the self-signature check of a request this process verified before;
 *   job i's CSR is csrBytes[csrEnds[i-1] .. csrEnds[i]) and its serial serials[16i .. 16i+16);
 *   the result holds the DER certificates back to back, then their PEM texts back to back: derEnds[i] is where job
 *   i's DER ends, pemEnds[i] where its PEM ends (counted from the first PEM); an empty job was not issued here.
 */
napi_value IssueBatch(napi_env env, napi_callback_info info) {
  size_t argc = 8, count, n_templates = 0, csr_len, serial_len, der_ends_len, pem_ends_len, index_len, csr_ends_len;
  napi_value argv[8], result;
  template templates[MAX_TEMPLATES];
  unsigned char *csr, *serials;
  uint16_t *index;
  uint32_t *csr_ends, *der_ends, *pem_ends;
  uint32_t n_keys = 0, n_tpl = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 8) return null_value(env);
  if (napi_get_array_length(env, argv[0], &n_keys) != napi_ok || napi_get_array_length(env, argv[1], &n_tpl) != napi_ok) return null_value(env);
  if (n_keys != n_tpl || n_tpl == 0 || n_tpl > MAX_TEMPLATES) return null_value(env);
  for (uint32_t k = 0; k < n_tpl; k++) {
    napi_value key_v, tpl_v;
    unsigned char *tpl;
    size_t tpl_len;
    if (napi_get_element(env, argv[0], k, &key_v) != napi_ok || napi_get_element(env, argv[1], k, &tpl_v) != napi_ok) return null_value(env);
    if (!get_bytes(env, tpl_v, &tpl, &tpl_len) || !read_template(tpl, tpl_len, signing_key_of(env, key_v), &templates[k])) return null_value(env);
    n_templates++;
  }
  if (!typed(env, argv[2], napi_uint16_array, (void **)&index, &index_len) || !typed(env, argv[4], napi_uint32_array, (void **)&csr_ends, &csr_ends_len) ||
      !typed(env, argv[6], napi_uint32_array, (void **)&der_ends, &der_ends_len) ||
      !typed(env, argv[7], napi_uint32_array, (void **)&pem_ends, &pem_ends_len))
    return null_value(env);
  if (!get_bytes(env, argv[3], &csr, &csr_len) || !get_bytes(env, argv[5], &serials, &serial_len)) return null_value(env);
  count = index_len;
  if (csr_ends_len != count || serial_len != SERIAL_LEN * count || der_ends_len != count || pem_ends_len != count) return null_value(env);

  /* Scratch kept per thread between calls: allocating it per call was a measurable share of a lone request. */
  static __thread growable tbs, der, pem, reads;
  tbs.len = der.len = pem.len = reads.len = 0;
  /* Every request read first, then their signatures checked together (verify_requests), then each issued. */
  if (!reserve(&reads, count * (sizeof(csr_fields) + 1))) return null_value(env);
  csr_fields *fields = (csr_fields *)reads.p;
  signed char *verdicts = (signed char *)(fields + count);
  size_t from = 0;
  for (size_t i = 0; i < count; i++) {
    size_t to = csr_ends[i];
    size_t k = index[i];
    verdicts[i] = 0;
    int readable = k != NO_TEMPLATE && (k & ~(size_t)CHECKED) < n_templates && from <= to && to <= csr_len;
    if (readable && csr_read(csr + from, to - from, &fields[i])) verdicts[i] = k & CHECKED ? 1 : VERIFY;
    if (to >= from) from = to;
  }
  verify_requests(fields, verdicts, count);
  int failed = 0;
  for (size_t i = 0; i < count && !failed; i++) {
    if (verdicts[i] == 1) issue_one(&templates[index[i] & ~CHECKED], &fields[i], serials + SERIAL_LEN * i, &tbs, &der, &pem);
    if (der.len > UINT32_MAX || pem.len > UINT32_MAX) failed = 1;
    der_ends[i] = (uint32_t)der.len;
    pem_ends[i] = (uint32_t)pem.len;
  }
  unsigned char *out = NULL;
  napi_value bytes;
  /* A Buffer's memory is not zeroed first (an ArrayBuffer's is): the copies below fill all of it. */
  if (failed || napi_create_buffer(env, der.len + pem.len, (void **)&out, &bytes) != napi_ok ||
      napi_get_typedarray_info(env, bytes, NULL, NULL, NULL, &result, NULL) != napi_ok)
    result = null_value(env);
  else {
    if (der.len) memcpy(out, der.p, der.len);
    if (pem.len) memcpy(out + der.len, pem.p, pem.len);
  }
  /* A batch far larger than usual does not keep its memory. */
  if (der.cap + pem.cap + reads.cap > SCRATCH_KEPT) {
    free(der.p);
    free(pem.p);
    free(reads.p);
    der = pem = reads = (growable){0};
  }
  return result;
}
