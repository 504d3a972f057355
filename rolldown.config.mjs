// `npm run build`'s last step: `platform-ca sign` in one file (dist/src/cli/sign.bundle.js), which the bin runs for
// `sign` because one file starts faster than the ~60 modules it imports (docs/benchmarks.md, cli).
export default {
  input: "dist/src/cli/sign-entry.js",
  platform: "node",
  logLevel: "warn",
  // Node's modules, native addons and optional packages stay outside. Dependencies go inside: an outside package
  // would be imported at start-up even where the command imports it lazily (yaml for --policy). Their licences travel
  // with them in node_modules, where the package's dependencies install them.
  external: [/^node:/, /\.node$/, "pkcs11js", "better-sqlite3"],
  output: { file: "dist/src/cli/sign.bundle.js", format: "esm", codeSplitting: false },
};
