/* The self-signature checks of a batch of requests, made together: ECDSA P-256 ones in runs that share one modular
 * inversion (Montgomery's trick) instead of one per signature, about a tenth of a verification's time. Only public
 * values are involved (the requests' keys, digests and signatures), so nothing here needs to run in constant time.
 * The checks are OpenSSL's (ossl_ecdsa_verify, ossl_ecdsa_simple_verify_sig): strict DER, 0 < r, s < n,
 * u1·G + u2·Q not at infinity, x ≡ r. */
#include "crypto.h"
#include <stdlib.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/obj_mac.h>

/* A run shares one inversion; a longer batch is taken in runs of this many. */
#define RUN 32

typedef struct {
  const EC_GROUP *group;
  const BIGNUM *order;
  BN_MONT_CTX *mont;
  BN_CTX *ctx;
  EC_POINT *q, *x_point;
  BIGNUM *acc[RUN], *s_mont[RUN], *inv, *w, *m, *u1, *u2, *x;
} batch_state;

/* Per thread, made once: the pool's workers each verify their own batches. */
static __thread batch_state *state;
/* Holds the group; made once per thread and kept (as crypto.c's verification keys are). */
static __thread EC_KEY *group_key;

static batch_state *batch_state_get(void) {
  if (state != NULL) return state;
  if (group_key == NULL) group_key = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
  batch_state *st = OPENSSL_zalloc(sizeof(*st));
  if (group_key == NULL || st == NULL) {
    OPENSSL_free(st);
    return NULL;
  }
  st->group = EC_KEY_get0_group(group_key);
  st->order = EC_GROUP_get0_order(st->group);
  st->ctx = BN_CTX_new();
  st->mont = BN_MONT_CTX_new();
  st->q = EC_POINT_new(st->group);
  st->x_point = EC_POINT_new(st->group);
  int ok = st->ctx && st->mont && st->q && st->x_point && BN_MONT_CTX_set(st->mont, st->order, st->ctx);
  BIGNUM **singles[] = {&st->inv, &st->w, &st->m, &st->u1, &st->u2, &st->x};
  for (size_t i = 0; ok && i < sizeof(singles) / sizeof(*singles); i++) ok = (*singles[i] = BN_new()) != NULL;
  for (size_t i = 0; ok && i < RUN; i++) ok = (st->acc[i] = BN_new()) != NULL && (st->s_mont[i] = BN_new()) != NULL;
  if (ok) return state = st;
  /* Out of memory: this call's jobs go the one-at-a-time way, and the next call tries again. */
  BN_CTX_free(st->ctx);
  BN_MONT_CTX_free(st->mont);
  EC_POINT_free(st->q);
  EC_POINT_free(st->x_point);
  for (size_t i = 0; i < sizeof(singles) / sizeof(*singles); i++) BN_free(*singles[i]);
  for (size_t i = 0; i < RUN; i++) BN_free(st->acc[i]), BN_free(st->s_mont[i]);
  OPENSSL_free(st);
  return NULL;
}

/* The signature as OpenSSL accepts it: DER with nothing after it and encoded as it would encode it, 0 < r, s < n. */
static ECDSA_SIG *read_signature(const batch_state *st, const ecdsa_job *job) {
  const unsigned char *p = job->sig;
  unsigned char *der = NULL;
  ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)job->sig_len);
  if (sig == NULL) return NULL;
  int der_len = i2d_ECDSA_SIG(sig, &der);
  const BIGNUM *r = ECDSA_SIG_get0_r(sig), *s = ECDSA_SIG_get0_s(sig);
  int ok = der_len == (int)job->sig_len && memcmp(job->sig, der, (size_t)der_len) == 0 && !BN_is_zero(r) && !BN_is_negative(r) &&
           BN_ucmp(r, st->order) < 0 && !BN_is_zero(s) && !BN_is_negative(s) && BN_ucmp(s, st->order) < 0;
  OPENSSL_free(der);
  if (!ok) ECDSA_SIG_free(sig);
  return ok ? sig : NULL;
}

/* Only the uncompressed form, as the request readers hand over (OpenSSL would also decode a hybrid 0x06/0x07 one). */
static int uncompressed(const ecdsa_job *job) {
  return job->point_len == 65 && job->point[0] == 0x04;
}

/* u1·G + u2·Q with w = s⁻¹ (Montgomery form) and the job's digest: 1 when its x is r mod n, 0 when not, -1 when the
 * point is not an uncompressed point of the curve (not judged here). */
static int finish(batch_state *st, const ecdsa_job *job, const ECDSA_SIG *sig) {
  if (!uncompressed(job) || EC_POINT_oct2point(st->group, st->q, job->point, job->point_len, st->ctx) != 1) return -1;
  /* The digest's leftmost 256 bits (n has 256), reduced below n for the Montgomery product. */
  size_t md_len = job->md_len < 32 ? job->md_len : 32;
  const BIGNUM *r = ECDSA_SIG_get0_r(sig);
  if (BN_bin2bn(job->md, (int)md_len, st->m) == NULL || !BN_nnmod(st->m, st->m, st->order, st->ctx) ||
      !BN_mod_mul_montgomery(st->u1, st->m, st->w, st->mont, st->ctx) || !BN_mod_mul_montgomery(st->u2, r, st->w, st->mont, st->ctx) ||
      !EC_POINT_mul(st->group, st->x_point, st->u1, st->q, st->u2, st->ctx))
    return -1;
  if (EC_POINT_is_at_infinity(st->group, st->x_point)) return 0;
  if (!EC_POINT_get_affine_coordinates(st->group, st->x_point, st->x, NULL, st->ctx) || !BN_nnmod(st->x, st->x, st->order, st->ctx)) return -1;
  return BN_ucmp(st->x, r) == 0;
}

/* One job the usual way (OpenSSL's ECDSA_verify), held to the same uncompressed form as a run. */
static int check_one(const ecdsa_job *j) {
  if (!uncompressed(j)) return -1;
  return ecdsa_check(256, j->point, j->point_len, j->md, j->md_len, j->sig, j->sig_len);
}

/* One run of at most RUN jobs: signatures read, s values multiplied up, one inversion, then each checked. */
static void verify_run(batch_state *st, const ecdsa_job *jobs, size_t count, signed char *verdicts) {
  ECDSA_SIG *sigs[RUN] = {0};
  size_t valid[RUN], n = 0;
  for (size_t i = 0; i < count; i++) {
    sigs[i] = read_signature(st, &jobs[i]);
    verdicts[i] = 0;
    if (sigs[i] == NULL) continue;
    const BIGNUM *s = ECDSA_SIG_get0_s(sigs[i]);
    int ok = BN_to_montgomery(st->s_mont[n], s, st->mont, st->ctx) &&
             (n == 0 ? BN_copy(st->acc[0], st->s_mont[0]) != NULL
                     : BN_mod_mul_montgomery(st->acc[n], st->acc[n - 1], st->s_mont[n], st->mont, st->ctx));
    if (!ok) goto one_by_one;
    valid[n++] = i;
  }
  /* inv = (s₀…sₙ₋₁)⁻¹, in Montgomery form; every s is in [1, n) and n is prime, so the product has an inverse. */
  if (n > 0 && (!BN_from_montgomery(st->inv, st->acc[n - 1], st->mont, st->ctx) ||
                BN_mod_inverse(st->inv, st->inv, st->order, st->ctx) == NULL || !BN_to_montgomery(st->inv, st->inv, st->mont, st->ctx)))
    goto one_by_one;
  for (size_t k = n; k-- > 0;) {
    /* w = sₖ⁻¹ = inv · (s₀…sₖ₋₁); then inv becomes (s₀…sₖ₋₁)⁻¹ for the next one down. */
    int ok = k > 0 ? BN_mod_mul_montgomery(st->w, st->inv, st->acc[k - 1], st->mont, st->ctx) &&
                         BN_mod_mul_montgomery(st->inv, st->inv, st->s_mont[k], st->mont, st->ctx)
                   : BN_copy(st->w, st->inv) != NULL;
    if (!ok) goto one_by_one;
    verdicts[valid[k]] = (signed char)finish(st, &jobs[valid[k]], sigs[valid[k]]);
  }
  for (size_t i = 0; i < count; i++) ECDSA_SIG_free(sigs[i]);
  return;
one_by_one:
  /* An arithmetic failure (memory): each job the usual way, as if no run had been tried. */
  for (size_t i = 0; i < count; i++) {
    ECDSA_SIG_free(sigs[i]);
    sigs[i] = NULL;
    verdicts[i] = (signed char)check_one(&jobs[i]);
  }
}

static int verified_alone(const csr_fields *f) {
  unsigned char md[64];
  int md_nid = 0;
  size_t md_len = digest(f->hash_bits, f->info.p, f->info.len, md, &md_nid);
  if (md_len == 0) return 0;
  if (f->key_kind == KEY_EC)
    return ecdsa_check(f->curve_bits, f->key_bits.p, f->key_bits.len, md, md_len, f->signature.p, f->signature.len) == 1;
  return rsa_check(f->rsa_n.p, f->rsa_n.len, f->rsa_e.p, f->rsa_e.len, md_nid, md, md_len, f->signature.p, f->signature.len) == 1;
}

void verify_requests(const csr_fields *fields, signed char *verdicts, size_t count) {
  ecdsa_job jobs[RUN];
  unsigned char mds[RUN][64];
  signed char run_verdicts[RUN];
  size_t at[RUN], n = 0;
  for (size_t i = 0; i <= count; i++) {
    if (i < count && verdicts[i] != VERIFY) continue;
    const csr_fields *f = i < count ? &fields[i] : NULL;
    int nid = 0;
    if (f != NULL && !(f->key_kind == KEY_EC && f->curve_bits == 256)) {
      verdicts[i] = (signed char)verified_alone(f);
      continue;
    }
    if (f != NULL) {
      jobs[n] = (ecdsa_job){.point = f->key_bits.p, .point_len = f->key_bits.len, .md = mds[n], .sig = f->signature.p, .sig_len = f->signature.len};
      jobs[n].md_len = digest(f->hash_bits, f->info.p, f->info.len, mds[n], &nid);
      if (jobs[n].md_len == 0) {
        verdicts[i] = 0;
        continue;
      }
      at[n++] = i;
    }
    if (n == RUN || (f == NULL && n > 0)) {
      ecdsa_check_batch(jobs, n, run_verdicts);
      for (size_t k = 0; k < n; k++) verdicts[at[k]] = run_verdicts[k] == 1;
      n = 0;
    }
  }
}

void ecdsa_check_batch(const ecdsa_job *jobs, size_t count, signed char *verdicts) {
  batch_state *st = batch_state_get();
  for (size_t from = 0; from < count; from += RUN) {
    size_t n = count - from < RUN ? count - from : RUN;
    /* A lone signature goes OpenSSL's own way: its inversion is faster than the generic one a run shares. */
    if (st != NULL && n > 1) {
      verify_run(st, jobs + from, n, verdicts + from);
      continue;
    }
    for (size_t i = from; i < from + n; i++)
      verdicts[i] = (signed char)check_one(&jobs[i]);
  }
}

/* verifyEcdsaBatch(points, hashBits, messages, signatures) -> Int8Array | null: P-256 checks of message i (hashed in C)
 * against uncompressed point i, 1 / 0 / -1 each (-1: not judged here: a point not uncompressed or not on the curve). */
napi_value VerifyEcdsaBatch(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], result, array;
  uint32_t count = 0, n_msgs = 0, n_sigs = 0;
  int32_t hash_bits = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 4 || napi_get_array_length(env, argv[0], &count) != napi_ok ||
      napi_get_value_int32(env, argv[1], &hash_bits) != napi_ok || napi_get_array_length(env, argv[2], &n_msgs) != napi_ok ||
      napi_get_array_length(env, argv[3], &n_sigs) != napi_ok || n_msgs != count || n_sigs != count || count > 65536)
    return null_value(env);
  ecdsa_job *jobs = calloc(count ? count : 1, sizeof(*jobs));
  unsigned char *mds = calloc(count ? count : 1, 64);
  signed char *verdicts = NULL;
  int ok = jobs != NULL && mds != NULL;
  for (uint32_t i = 0; ok && i < count; i++) {
    napi_value v;
    unsigned char *msg;
    size_t msg_len;
    int nid = 0;
    ok = napi_get_element(env, argv[0], i, &v) == napi_ok && get_bytes(env, v, (unsigned char **)&jobs[i].point, &jobs[i].point_len) &&
         napi_get_element(env, argv[2], i, &v) == napi_ok && get_bytes(env, v, &msg, &msg_len) &&
         napi_get_element(env, argv[3], i, &v) == napi_ok && get_bytes(env, v, (unsigned char **)&jobs[i].sig, &jobs[i].sig_len) &&
         (jobs[i].md_len = digest(hash_bits, msg, msg_len, mds + 64 * i, &nid)) > 0;
    jobs[i].md = mds + 64 * i;
  }
  if (ok && napi_create_arraybuffer(env, count, (void **)&verdicts, &array) == napi_ok &&
      napi_create_typedarray(env, napi_int8_array, count, array, 0, &result) == napi_ok)
    ecdsa_check_batch(jobs, count, verdicts);
  else
    result = null_value(env);
  free(jobs);
  free(mds);
  return result;
}
