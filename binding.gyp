{
  "targets": [
    {
      "target_name": "platform_ca_native",
      "sources": ["native/crypto.c", "native/csr.c", "native/issue.c", "native/verify-batch.c", "native/verify-async.c", "native/rsa-keygen.c", "native/rsa-keygen-async.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
