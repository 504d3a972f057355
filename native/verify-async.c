/*
 * verifyRequests for JavaScript: the self-signature checks of a batch of DER requests as asynchronous work on libuv's
 * pool (csr_read, then verify_requests: P-256 runs share one inversion), so the API server's thread goes on serving
 * while the requests it has just received are checked on another core.
 */
#include "crypto.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Far more than a burst queues while one job runs (src/pki/verify-ahead.ts sends at most 512); a larger batch is
 * refused, and the caller checks on its own thread then. */
#define MAX_REQUESTS 4096

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  size_t count;
  unsigned char *bytes; /* the requests back to back: a copy, so the caller's buffers may change meanwhile */
  uint32_t *ends;
  signed char *verdicts;
} verify_job;

static void verify_execute(napi_env env, void *data) {
  (void)env;
  verify_job *job = data;
  csr_fields *fields = calloc(job->count, sizeof(*fields));
  if (fields == NULL) return; /* verdicts stay 0: not verified here, the caller judges on its own thread */
  size_t from = 0;
  for (size_t i = 0; i < job->count; i++) {
    size_t to = job->ends[i];
    job->verdicts[i] = to > from && csr_read(job->bytes + from, to - from, &fields[i]) ? VERIFY : 0;
    from = to;
  }
  verify_requests(fields, job->verdicts, job->count);
  free(fields);
}

static void verify_free(verify_job *job) {
  free(job->bytes);
  free(job->ends);
  free(job->verdicts);
  free(job);
}

static void verify_complete(napi_env env, napi_status status, void *data) {
  verify_job *job = data;
  napi_value result = NULL, array;
  void *out = NULL;
  if (status == napi_ok && napi_create_arraybuffer(env, job->count, &out, &array) == napi_ok &&
      napi_create_typedarray(env, napi_int8_array, job->count, array, 0, &result) == napi_ok) {
    memcpy(out, job->verdicts, job->count);
  } else {
    /* Cancelled or out of memory: nothing verified, which the caller reads as "judge it yourself". */
    napi_create_int32(env, 0, &result);
  }
  napi_resolve_deferred(env, job->deferred, result);
  napi_delete_async_work(env, job->work);
  verify_free(job);
}

/* verifyRequests(bytes, ends) -> Promise<Int8Array> | null: request i is bytes[ends[i-1]..ends[i]); its verdict is 1
 * when it reads and its signature verifies, 0 otherwise (not read natively, or not verified: the caller judges it).
 * Null when the arguments are not of this shape. */
napi_value VerifyRequests(napi_env env, napi_callback_info info) {
  size_t argc = 2, len = 0, ends_len = 0;
  napi_value argv[2], promise;
  unsigned char *bytes = NULL;
  void *ends = NULL;
  napi_typedarray_type type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2 || !get_bytes(env, argv[0], &bytes, &len) ||
      napi_get_typedarray_info(env, argv[1], &type, &ends_len, &ends, NULL, NULL) != napi_ok || type != napi_uint32_array ||
      ends_len == 0 || ends_len > MAX_REQUESTS)
    return null_value(env);
  const uint32_t *e = ends;
  for (size_t i = 0; i < ends_len; i++)
    if (e[i] > len || (i > 0 && e[i] < e[i - 1])) return null_value(env);
  verify_job *job = calloc(1, sizeof(*job));
  if (job == NULL) return null_value(env);
  job->count = ends_len;
  job->bytes = malloc(len ? len : 1);
  job->ends = malloc(ends_len * sizeof(uint32_t));
  job->verdicts = calloc(ends_len, 1);
  if (job->bytes == NULL || job->ends == NULL || job->verdicts == NULL) {
    verify_free(job);
    return null_value(env);
  }
  memcpy(job->bytes, bytes, len);
  memcpy(job->ends, e, ends_len * sizeof(uint32_t));
  if (!queue_promised_work(env, "platform-ca:verify-requests", verify_execute, verify_complete, job, &job->work, &job->deferred, &promise)) {
    verify_free(job);
    return null_value(env);
  }
  return promise;
}
