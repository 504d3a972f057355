{
  "targets": [
    {
      "target_name": "platform_ca_native",
      "sources": ["native/ecdsa-verify.c"],
      "cflags": ["-O2"]
    }
  ]
}
