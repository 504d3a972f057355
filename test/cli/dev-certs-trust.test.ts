// `dev-certs install|uninstall` against a fake system root (the real update-ca-certificates runs in it) and a real NSS db.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, runCli } from "./fixtures.js";
import { hasCommand } from "../fixtures/process.js";
import { tempDir } from "../fixtures/temp-dir.js";

/** A directory laid out like a Debian root's trust store, with one distribution CA listed in ca-certificates.conf. */
function fakeRoot(dir: string): string {
  for (const d of ["etc/ssl/certs", "usr/share/ca-certificates/distro", "usr/local/share/ca-certificates", "etc/ca-certificates/update.d"]) mkdirSync(join(dir, d), { recursive: true });
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", join(dir, "distro.key"), "-out", join(dir, "usr/share/ca-certificates/distro/distro.crt"), "-subj", "/CN=Distro Root", "-days", "2"], { stdio: "ignore" });
  writeFileSync(join(dir, "etc/ca-certificates.conf"), "distro/distro.crt\n");
  execFileSync("update-ca-certificates", ["--certsconf", join(dir, "etc/ca-certificates.conf"), "--certsdir", join(dir, "usr/share/ca-certificates"), "--localcertsdir", join(dir, "usr/local/share/ca-certificates"), "--etccertsdir", join(dir, "etc/ssl/certs"), "--hooksdir", join(dir, "etc/ca-certificates/update.d")], { stdio: "ignore" });
  return dir;
}

const bundle = (sys: string) => readFileSync(join(sys, "etc/ssl/certs/ca-certificates.crt"), "utf8");

const nssList = (db: string) => execFileSync("certutil", ["-L", "-d", `sql:${db}`], { encoding: "utf8" });

describe.runIf(hasCommand("update-ca-certificates") && hasCommand("certutil"))("dev-certs install and uninstall", () => {
  const root = tempDir("platform-ca-trust-");
  const home = join(root, "home");
  const sys = fakeRoot(join(root, "sysroot"));
  const nssdb = join(home, ".pki", "nssdb");
  mkdirSync(nssdb, { recursive: true });
  execFileSync("certutil", ["-N", "--empty-password", "-d", `sql:${nssdb}`]);
  const env = { HOME: home, XDG_DATA_HOME: "", PLATFORM_CA_ROOT: "", PLATFORM_CA_TRUST_STORE_ROOT: sys };
  const cli = (...args: string[]) => runCli(["dev-certs", ...args], { cwd: root, env });
  const caFile = join(home, ".local/share/platform-ca/ca.crt");

  it("creates the per-user CA, adds it to the system bundle and the NSS db, then finds it there", async () => {
    const r = await cli("install");
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toMatch(/^STORE\s+LOCATION\s+RESULT\s+DETAIL$/m);
    expect(r.stdout).toMatch(/^system\s+\S+platform-ca-dev-[0-9a-f]{16}\.crt\s+added\s+update-ca-certificates ran$/m);
    expect(r.stdout).toMatch(/^nss\s+home\/\.pki\/nssdb\s+added\s/m);
    const ca = readFileSync(caFile, "utf8");
    // update-ca-certificates itself wrote the bundle and the hash link openssl looks up.
    expect(bundle(sys)).toContain(ca.trim());
    expect(bundle(sys).match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    const hash = execFileSync("openssl", ["x509", "-in", caFile, "-noout", "-hash"], { encoding: "utf8" }).trim();
    expect(readdirSync(join(sys, "etc/ssl/certs"))).toContain(`${hash}.0`);
    expect(nssList(nssdb)).toMatch(/^platform-ca development CA \S+ [0-9a-f]{16}\s+C,,\s*$/m);

    const again = await cli("install");
    expect(again.stdout).toMatch(/^system\s.*\spresent\s+already trusted$/m);
    expect(again.stdout).toMatch(/^nss\s.*\spresent\s/m);
  });

  it("removes it from both, and says so when it was not there", async () => {
    const r = await cli("uninstall");
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toMatch(/^system\s.*\sremoved\s/m);
    expect(r.stdout).toMatch(/^nss\s.*\sremoved\s/m);
    expect(bundle(sys)).not.toContain(readFileSync(caFile, "utf8").trim());
    expect(bundle(sys).match(/BEGIN CERTIFICATE/g)).toHaveLength(1);
    expect(readdirSync(join(sys, "usr/local/share/ca-certificates"))).toEqual([]);
    // No link is left pointing at the removed file.
    expect(readdirSync(join(sys, "etc/ssl/certs")).filter((f) => !existsSync(join(sys, "etc/ssl/certs", f)))).toEqual([]);
    expect(nssList(nssdb)).not.toContain("platform-ca");
    const again = await cli("uninstall", "--store", "system");
    expect(again.stdout).toMatch(/^system\s.*\sabsent\s+was not installed$/m);
    expect(again.stdout).not.toMatch(/^nss/m);
  });

  it("skips NSS with a hint when there is no database, and refuses an unknown store", async () => {
    const r = await runCli(["dev-certs", "install", "--store", "nss"], { cwd: root, env: { ...env, HOME: join(root, "nobody-home") } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^nss\s.*\sskipped\s+no NSS database found/m);
    const bad = await cli("install", "--store", "keychain");
    expect([bad.code, bad.stderr]).toEqual([2, 'error: --store takes system and/or nss, got "keychain"\n']);
  });

  it.runIf(process.getuid?.() === 0 && hasCommand("runuser"))("tells a user without rights on the system store to use sudo, naming the CA directory", async () => {
    const user = join(root, "user");
    mkdirSync(user);
    chownSync(user, 65534, 65534);
    chmodSync(root, 0o755);
    const out = execFileSync("sh", ["-c", `runuser -u nobody -- env HOME=${user} PLATFORM_CA_TRUST_STORE_ROOT=${sys} "${process.execPath}" "${CLI}" dev-certs install --store system; echo "exit $?"`], { cwd: user, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const caDir = join(user, ".local/share/platform-ca");
    expect(out).toMatch(/^system\s.*\srefused\s+cannot write \S+ \(EACCES\)/m);
    expect(out).toMatch(/exit 1\n$/);
    expect(existsSync(join(caDir, "ca.crt"))).toBe(true);
    let stderr = "";
    try {
      execFileSync("runuser", ["-u", "nobody", "--", "env", `HOME=${user}`, `PLATFORM_CA_TRUST_STORE_ROOT=${sys}`, process.execPath, CLI, "dev-certs", "install", "--store", "system"], { cwd: user, stdio: ["ignore", "pipe", "pipe"] });
    } catch (err) {
      stderr = String((err as { stderr?: Buffer }).stderr);
    }
    expect(stderr).toMatch(new RegExp(`^error: the system trust store was not changed: cannot write .* the system store needs root: sudo platform-ca dev-certs install --store system --ca-dir ${caDir}\\n$`));
    expect(readdirSync(join(sys, "usr/local/share/ca-certificates"))).toEqual([]);
  });
});
