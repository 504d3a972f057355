/* Declarations shared by the accelerator's sources: the strict CSR reader, the signature helpers and batched issuance. */
#ifndef PLATFORM_CA_NATIVE_CRYPTO_H
#define PLATFORM_CA_NATIVE_CRYPTO_H

#define OPENSSL_SUPPRESS_DEPRECATED
#include <node_api.h>
#include <stddef.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

typedef struct {
  const unsigned char *p;
  size_t len;
} span;

/* What issuance reads of a request the strict reader accepted; every span points into the request's bytes. */
typedef struct {
  span info;      /* CertificationRequestInfo, header included: the signed bytes */
  span subject;   /* subject Name, header included */
  span spki;      /* SubjectPublicKeyInfo, header included */
  span key_bits;  /* subjectPublicKey BIT STRING contents after the unused-bits octet (the SKI input) */
  int key_kind;   /* KEY_EC or KEY_RSA */
  int curve_bits; /* 256 / 384 / 521 for KEY_EC */
  span rsa_n, rsa_e; /* magnitudes, for KEY_RSA */
  int hash_bits;  /* hash of the request's signature: 256 / 384 / 512 */
  span signature; /* signature BIT STRING contents after the unused-bits octet */
  span extensions; /* contents of the extensionRequest's SEQUENCE OF Extension; len 0 when none */
} csr_fields;

enum { KEY_EC = 1, KEY_RSA = 2 };

/*
 * Reads a DER PKCS#10 request at least as strictly as src/pki/csr.ts's parseCsr: 1 when it is well formed and of a
 * kind issued here (ECDSA P-256/384/521 with an uncompressed point, RSA PKCS#1 v1.5), 0 for anything else, which the
 * JavaScript reader then judges (and refuses, or handles: Ed25519, RSASSA-PSS, compressed points).
 */
int csr_read(const unsigned char *der, size_t len, csr_fields *out);

/* The next element of an extension list read by csr_read: OID TLV, critical flag, extnValue contents. 0 at the end. */
typedef struct {
  span oid;
  int critical;
  span value;
} csr_extension;
int csr_next_extension(span *rest, csr_extension *out);

/* SHA-2 digest by size (256/384/512) into out; returns the digest length and the hash's NID, or 0. */
size_t digest(int hash_bits, const unsigned char *msg, size_t len, unsigned char *out, int *nid);

/* 1 valid, 0 invalid, -1 not judged (point not on the curve, unknown curve, oversized input). */
int ecdsa_check(int curve_bits, const unsigned char *point, size_t point_len, const unsigned char *md, size_t md_len,
                const unsigned char *sig, size_t sig_len);
/* One ECDSA P-256 check of a batch: the uncompressed point, the request's digest, its DER signature. */
typedef struct {
  const unsigned char *point, *md, *sig;
  size_t point_len, md_len, sig_len;
} ecdsa_job;
/* verdicts[i] for job i, as ecdsa_check(256, …) answers an uncompressed point: 1 valid, 0 invalid, -1 not judged
 * (native/verify-batch.c). */
void ecdsa_check_batch(const ecdsa_job *jobs, size_t count, signed char *verdicts);
/* The self-signature checks of a batch's requests: each verdicts[i] that is VERIFY becomes 1 (verified) or 0 (not, or
 * not judged here: the JavaScript path then judges it); other verdicts are left as they are. */
#define VERIFY 2
void verify_requests(const csr_fields *fields, signed char *verdicts, size_t count);

/* 1 valid, 0 invalid, -1 not judged. */
int rsa_check(const unsigned char *n, size_t n_len, const unsigned char *e, size_t e_len, int md_nid, const unsigned char *md,
              size_t md_len, const unsigned char *sig, size_t sig_len);

typedef struct {
  int type; /* EVP_PKEY_EC or EVP_PKEY_RSA */
  EC_KEY *ec;
  RSA *rsa;
} signing_key;

/* Signs the digest with the CA key into sig (room for `room` bytes); returns the signature length or 0. */
unsigned int sign_digest(const signing_key *k, int md_nid, const unsigned char *md, size_t md_len, unsigned char *sig, size_t room);

int get_bytes(napi_env env, napi_value v, unsigned char **data, size_t *len);
napi_value null_value(napi_env env);
/* A promise for work on libuv's pool (execute there, complete back on the JavaScript thread); 0 when it could not be
 * queued (a promise made before the failure is left pending, unreachable). */
int queue_promised_work(napi_env env, const char *name, napi_async_execute_callback execute, napi_async_complete_callback complete,
                        void *data, napi_async_work *work, napi_deferred *deferred, napi_value *promise);
signing_key *signing_key_of(napi_env env, napi_value v);

napi_value IssueBatch(napi_env env, napi_callback_info info);
napi_value VerifyEcdsaBatch(napi_env env, napi_callback_info info);
napi_value VerifyRequests(napi_env env, napi_callback_info info);
napi_value GenerateRsaKey(napi_env env, napi_callback_info info);
napi_value IsProbablePrime(napi_env env, napi_callback_info info);

#endif
