/*
 * Optional accelerator for the issuance hot path, built on the OpenSSL that Node itself exports:
 *
 *   verifyEcdsa  CSR signature check on P-256/384/521 without importing the key through OpenSSL 3's EVP decoder
 *                and key check (measured: that import is ~50 µs of a ~100 µs P-256 parse + verify). The point is
 *                decoded with EC_KEY_oct2key, which checks that it lies on the curve (sufficient for the
 *                cofactor-1 NIST curves).
 *   verifyRsa    PKCS#1 v1.5 CSR signature check from the modulus and exponent, without a JWK import.
 *   signingKey   a CA private key (PKCS#8 DER) held as EC_KEY / RSA for the life of the issuer;
 *   sign         one ECDSA or RSA PKCS#1 v1.5 signature with it, hashing in C: no EVP context per call.
 *   issueBatch   a batch of CSRs read, checked, and issued as certificates in one call (issue.c, csr.c).
 *   verifyRequests  a batch of requests' self-signatures checked on the libuv pool (verify-async.c), ahead of the
 *                  thread that will parse them.
 *   generateRsaKey  an RSA key generated on the libuv pool (rsa-keygen.c, rsa-keygen-async.c); isProbablePrime its
 *                  primality test.
 *
 * Every function hashes the message itself (SHA-256/384/512). src/pki/native.ts falls back to node:crypto when
 * this module is not built or is disabled, and for what it does not cover (Ed25519, RSA-PSS, compressed points).
 */
#include "crypto.h"
#include <stdlib.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

/* One EC_KEY per curve and thread: re-used because building a curve group costs more than a verification. */
static __thread EC_KEY *verify_keys[3];
/* Scratch numbers for decoding points, per thread: a BN_CTX made per call costs allocations at every request. */
static __thread BN_CTX *point_ctx;

static int curve_slot(int bits, int *nid) {
  switch (bits) {
    case 256: *nid = NID_X9_62_prime256v1; return 0;
    case 384: *nid = NID_secp384r1; return 1;
    case 521: *nid = NID_secp521r1; return 2;
    default: return -1;
  }
}

int get_bytes(napi_env env, napi_value v, unsigned char **data, size_t *len) {
  bool is_typed = false;
  napi_typedarray_type type;
  void *p = NULL;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed) return 0;
  if (napi_get_typedarray_info(env, v, &type, len, &p, NULL, NULL) != napi_ok) return 0;
  *data = p;
  return type == napi_uint8_array;
}

/* hashBits 256/384/512 → digest of msg into out; returns the digest length and the NID of the hash, or 0. */
size_t digest(int hash_bits, const unsigned char *msg, size_t len, unsigned char *out, int *nid) {
  switch (hash_bits) {
    /* The low-level contexts: OpenSSL 3's one-shot SHA256() fetches the digest by name (a locked lookup) at every call. */
    case 256: { SHA256_CTX c; SHA256_Init(&c); SHA256_Update(&c, msg, len); SHA256_Final(out, &c); *nid = NID_sha256; return 32; }
    case 384: { SHA512_CTX c; SHA384_Init(&c); SHA384_Update(&c, msg, len); SHA384_Final(out, &c); *nid = NID_sha384; return 48; }
    case 512: { SHA512_CTX c; SHA512_Init(&c); SHA512_Update(&c, msg, len); SHA512_Final(out, &c); *nid = NID_sha512; return 64; }
    default: return 0;
  }
}

int queue_promised_work(napi_env env, const char *name, napi_async_execute_callback execute, napi_async_complete_callback complete,
                        void *data, napi_async_work *work, napi_deferred *deferred, napi_value *promise) {
  napi_value resource_name;
  return napi_create_promise(env, deferred, promise) == napi_ok &&
         napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource_name) == napi_ok &&
         napi_create_async_work(env, NULL, resource_name, execute, complete, data, work) == napi_ok && napi_queue_async_work(env, *work) == napi_ok;
}

napi_value null_value(napi_env env) {
  napi_value v;
  napi_get_null(env, &v);
  return v;
}

static napi_value bool_value(napi_env env, int b) {
  napi_value v;
  napi_get_boolean(env, b != 0, &v);
  return v;
}

int ecdsa_check(int curve_bits, const unsigned char *point, size_t point_len, const unsigned char *md, size_t md_len,
                const unsigned char *sig, size_t sig_len) {
  int nid = 0;
  int slot = curve_slot(curve_bits, &nid);
  if (slot < 0 || sig_len > 256 || point_len > 200) return -1;
  if (verify_keys[slot] == NULL) verify_keys[slot] = EC_KEY_new_by_curve_name(nid);
  if (verify_keys[slot] == NULL) return -1;
  if (point_ctx == NULL) point_ctx = BN_CTX_new();
  if (point_ctx == NULL || EC_KEY_oct2key(verify_keys[slot], point, point_len, point_ctx) != 1) return -1;
  /* A malformed signature DER (-1) is a mismatch, as in node:crypto. */
  return ECDSA_verify(0, md, (int)md_len, sig, (int)sig_len, verify_keys[slot]) == 1;
}

/* verifyEcdsa(curveBits, uncompressedPoint, hashBits, message, derSignature) -> true | false | null (null: not judged here) */
static napi_value VerifyEcdsa(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  unsigned char *point, *msg, *sig, md[64];
  size_t point_len, msg_len, sig_len, md_len;
  int32_t bits = 0, hash_bits = 0;
  int md_nid = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 5) return null_value(env);
  if (napi_get_value_int32(env, argv[0], &bits) != napi_ok || napi_get_value_int32(env, argv[2], &hash_bits) != napi_ok) return null_value(env);
  if (!get_bytes(env, argv[1], &point, &point_len) || !get_bytes(env, argv[3], &msg, &msg_len) || !get_bytes(env, argv[4], &sig, &sig_len))
    return null_value(env);
  int nid;
  if (curve_slot(bits, &nid) < 0 || sig_len > 256 || point_len > 200) return null_value(env);
  md_len = digest(hash_bits, msg, msg_len, md, &md_nid);
  if (md_len == 0) return null_value(env);
  int verdict = ecdsa_check(bits, point, point_len, md, md_len, sig, sig_len);
  return verdict < 0 ? null_value(env) : bool_value(env, verdict);
}

int rsa_check(const unsigned char *n, size_t n_len, const unsigned char *e, size_t e_len, int md_nid, const unsigned char *md,
              size_t md_len, const unsigned char *sig, size_t sig_len) {
  if (n_len == 0 || n_len > 1025 || e_len == 0 || e_len > 8) return -1;
  RSA *rsa = RSA_new();
  BIGNUM *bn_n = BN_bin2bn(n, (int)n_len, NULL), *bn_e = BN_bin2bn(e, (int)e_len, NULL);
  if (rsa == NULL || bn_n == NULL || bn_e == NULL || RSA_set0_key(rsa, bn_n, bn_e, NULL) != 1) {
    BN_free(bn_n);
    BN_free(bn_e);
    RSA_free(rsa);
    return -1;
  }
  int ok = RSA_verify(md_nid, md, (unsigned int)md_len, sig, (unsigned int)sig_len, rsa);
  RSA_free(rsa);
  return ok == 1;
}

/* verifyRsa(modulus, exponent, hashBits, message, signature) -> true | false | null */
static napi_value VerifyRsa(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  unsigned char *n, *e, *msg, *sig, md[64];
  size_t n_len, e_len, msg_len, sig_len, md_len;
  int32_t hash_bits = 0;
  int md_nid = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 5) return null_value(env);
  if (napi_get_value_int32(env, argv[2], &hash_bits) != napi_ok) return null_value(env);
  if (!get_bytes(env, argv[0], &n, &n_len) || !get_bytes(env, argv[1], &e, &e_len) || !get_bytes(env, argv[3], &msg, &msg_len) ||
      !get_bytes(env, argv[4], &sig, &sig_len))
    return null_value(env);
  if (n_len == 0 || n_len > 1025 || e_len == 0 || e_len > 8) return null_value(env);
  md_len = digest(hash_bits, msg, msg_len, md, &md_nid);
  if (md_len == 0) return null_value(env);
  int verdict = rsa_check(n, n_len, e, e_len, md_nid, md, md_len, sig, sig_len);
  return verdict < 0 ? null_value(env) : bool_value(env, verdict);
}

static void free_signing_key(napi_env env, void *data, void *hint) {
  signing_key *k = data;
  (void)env;
  (void)hint;
  if (k->ec) EC_KEY_free(k->ec);
  if (k->rsa) RSA_free(k->rsa);
  free(k);
}

/* signingKey(pkcs8Der) -> external handle | null (null: key type not handled here) */
static napi_value SigningKey(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  unsigned char *der;
  size_t der_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1) return null_value(env);
  if (!get_bytes(env, argv[0], &der, &der_len)) return null_value(env);
  const unsigned char *p = der;
  EVP_PKEY *pkey = d2i_AutoPrivateKey(NULL, &p, (long)der_len);
  if (pkey == NULL) return null_value(env);
  signing_key *k = calloc(1, sizeof(signing_key));
  if (k == NULL) {
    EVP_PKEY_free(pkey);
    return null_value(env);
  }
  k->type = EVP_PKEY_get_base_id(pkey);
  if (k->type == EVP_PKEY_EC) k->ec = EVP_PKEY_get1_EC_KEY(pkey);
  else if (k->type == EVP_PKEY_RSA) k->rsa = EVP_PKEY_get1_RSA(pkey);
  EVP_PKEY_free(pkey);
  if (k->ec == NULL && k->rsa == NULL) {
    free(k);
    return null_value(env);
  }
  if (napi_create_external(env, k, free_signing_key, NULL, &result) != napi_ok) {
    free_signing_key(env, k, NULL);
    return null_value(env);
  }
  return result;
}

unsigned int sign_digest(const signing_key *k, int md_nid, const unsigned char *md, size_t md_len, unsigned char *sig, size_t room) {
  unsigned int sig_len = 0;
  int ok = 0;
  if (k->ec != NULL) {
    if ((size_t)ECDSA_size(k->ec) > room) return 0;
    ok = ECDSA_sign(0, md, (int)md_len, sig, &sig_len, k->ec);
  } else if (k->rsa != NULL) {
    if ((size_t)RSA_size(k->rsa) > room) return 0;
    ok = RSA_sign(md_nid, md, (unsigned int)md_len, sig, &sig_len, k->rsa);
  }
  return ok == 1 ? sig_len : 0;
}

/* The signing key behind a handle from signingKey, or NULL. */
signing_key *signing_key_of(napi_env env, napi_value v) {
  napi_valuetype t;
  signing_key *k = NULL;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, (void **)&k) != napi_ok) return NULL;
  return k;
}

/* sign(handle, hashBits, message) -> Buffer (ECDSA: DER Ecdsa-Sig-Value; RSA: PKCS#1 v1.5) | null on failure */
static napi_value Sign(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  signing_key *k = NULL;
  unsigned char *msg, md[64], sig[1024];
  size_t msg_len, md_len;
  unsigned int sig_len = 0;
  int32_t hash_bits = 0;
  int md_nid = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 3) return null_value(env);
  if ((k = signing_key_of(env, argv[0])) == NULL) return null_value(env);
  if (napi_get_value_int32(env, argv[1], &hash_bits) != napi_ok || !get_bytes(env, argv[2], &msg, &msg_len)) return null_value(env);
  md_len = digest(hash_bits, msg, msg_len, md, &md_nid);
  if (md_len == 0) return null_value(env);
  sig_len = sign_digest(k, md_nid, md, md_len, sig, sizeof(sig));
  if (sig_len == 0) return null_value(env);
  if (napi_create_buffer_copy(env, sig_len, sig, NULL, &result) != napi_ok) return null_value(env);
  return result;
}

static void export_fn(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn);
  napi_set_named_property(env, exports, name, fn);
}

static napi_value Init(napi_env env, napi_value exports) {
  export_fn(env, exports, "verifyEcdsa", VerifyEcdsa);
  export_fn(env, exports, "verifyRsa", VerifyRsa);
  export_fn(env, exports, "signingKey", SigningKey);
  export_fn(env, exports, "sign", Sign);
  export_fn(env, exports, "issueBatch", IssueBatch);
  export_fn(env, exports, "verifyEcdsaBatch", VerifyEcdsaBatch);
  export_fn(env, exports, "verifyRequests", VerifyRequests);
  export_fn(env, exports, "generateRsaKey", GenerateRsaKey);
  export_fn(env, exports, "isProbablePrime", IsProbablePrime);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
