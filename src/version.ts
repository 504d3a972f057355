// The product version reported by the CLIs and the API server's /version.
export const VERSION = "0.1.0";
