/*
 * generateRsaKey and isProbablePrime for JavaScript: rsa-keygen.c's generator as asynchronous work on libuv's pool
 * (many keys generate in parallel while the JavaScript thread goes on), its primality test synchronously for tests.
 */
#include "crypto.h"
#include "rsa-keygen.h"
#include <stdlib.h>

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int bits;
  int ok;
  rsa_key_parts parts;
} keygen_job;

static const char *const PART_NAMES[RSA_KEY_PARTS] = {"n", "e", "d", "p", "q", "dp", "dq", "qi"};

static void keygen_execute(napi_env env, void *data) {
  (void)env;
  keygen_job *job = data;
  job->ok = rsa_generate_key(job->bits, &job->parts);
}

static void keygen_complete(napi_env env, napi_status status, void *data) {
  keygen_job *job = data;
  napi_value result = NULL, buffer, message;
  int ok = status == napi_ok && job->ok && napi_create_object(env, &result) == napi_ok;
  for (int i = 0; ok && i < RSA_KEY_PARTS; i++) {
    ok = napi_create_buffer_copy(env, job->parts.len[i], job->parts.part[i], NULL, &buffer) == napi_ok &&
         napi_set_named_property(env, result, PART_NAMES[i], buffer) == napi_ok;
  }
  rsa_key_parts_clear(&job->parts);
  if (ok) {
    napi_resolve_deferred(env, job->deferred, result);
  } else {
    napi_create_string_utf8(env, "RSA key generation failed", NAPI_AUTO_LENGTH, &message);
    napi_create_error(env, NULL, message, &result);
    napi_reject_deferred(env, job->deferred, result);
  }
  napi_delete_async_work(env, job->work);
  free(job);
}

/* generateRsaKey(bits) -> Promise<{ n, e, d, p, q, dp, dq, qi }> (Buffers) | null when bits is not 2048–8192, ×8. */
napi_value GenerateRsaKey(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], promise;
  int32_t bits = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1) return null_value(env);
  if (napi_get_value_int32(env, argv[0], &bits) != napi_ok) return null_value(env);
  if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS || bits % 8 != 0) return null_value(env);
  keygen_job *job = calloc(1, sizeof(*job));
  if (job == NULL) return null_value(env);
  job->bits = bits;
  if (!queue_promised_work(env, "platform-ca:rsa-keygen", keygen_execute, keygen_complete, job, &job->work, &job->deferred, &promise)) {
    free(job);
    return null_value(env);
  }
  return promise;
}

/* isProbablePrime(bytes, rounds) -> boolean | null when the arguments are not of that shape. */
napi_value IsProbablePrime(napi_env env, napi_callback_info info) {
  size_t argc = 2, len = 0;
  napi_value argv[2], result;
  unsigned char *bytes = NULL;
  int32_t rounds = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2 || !get_bytes(env, argv[0], &bytes, &len)) return null_value(env);
  if (napi_get_value_int32(env, argv[1], &rounds) != napi_ok) return null_value(env);
  int verdict = rsa_is_probable_prime(bytes, len, rounds);
  if (verdict < 0) return null_value(env);
  napi_get_boolean(env, verdict == 1, &result);
  return result;
}
