// `npm run build`'s last step: `platformctl` and `platform-ca sign` each in one file under dist/src/cli/, which their
// bins run when built, because one file starts faster than the modules it imports (docs/benchmarks.md, cli).
const bundle = (input, file) => ({
  input: `dist/src/cli/${input}`,
  platform: "node",
  logLevel: "warn",
  // Node's modules, native addons and optional packages stay outside. Dependencies go inside: an outside package
  // would be imported at start-up even where the program imports it lazily (yaml for --policy). Their licences travel
  // with them in node_modules, where the package's dependencies install them.
  external: [/^node:/, /\.node$/, "pkcs11js", "better-sqlite3"],
  output: { file: `dist/src/cli/${file}`, format: "esm", codeSplitting: false },
});

export default [bundle("sign-entry.js", "sign.bundle.js"), bundle("platformctl-main.js", "platformctl.bundle.js")];
