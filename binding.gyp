{
  "targets": [
    {
      "target_name": "platform_ca_native",
      "sources": ["native/crypto.c"],
      "cflags": ["-O2"]
    }
  ]
}
