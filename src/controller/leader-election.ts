// Leader election over a Lease: one replica of the controllers works at a time, and stops before another may start.
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { LEASE_KIND, LEASE_VERSION, type Lease, type LeaseSpec } from "../api/types/coordination.js";
import type { ResourceClient } from "../client/types.js";
import { invalidOption, isPlatformError, PlatformError } from "../errors.js";
import { childLogger, silentLogger, type Logger } from "../logger.js";
import { formatMicroTime } from "../api/meta.js";
import { systemClock, type Clock } from "../time/clock.js";

export interface LeaderCallbacks {
  /** Called once leadership is won; `signal` aborts when it is lost or released. */
  onStartedLeading(signal: AbortSignal): unknown;
  /** Called after leadership ends (lost or released), never when it was not held. */
  onStoppedLeading?(): unknown;
  /** Called whenever the observed holder changes (including to this candidate). */
  onNewLeader?(identity: string): unknown;
}

export interface LeaderElectorOptions {
  readonly client: ResourceClient<Lease>;
  readonly name: string;
  readonly namespace: string;
  /** This candidate's identity (unique per replica, e.g. host name plus a random suffix). */
  readonly identity: string;
  /** Non-leaders wait this long after the last observed change before taking over (default 15 s). */
  readonly leaseDurationMs?: number;
  /** The leader steps down when it has not renewed for this long (default 10 s; at most leaseDurationMs). */
  readonly renewDeadlineMs?: number;
  /** Time between attempts to acquire or renew (default 2 s). */
  readonly retryPeriodMs?: number;
  /** Write a released lease on stop so another candidate can take over at once (default true). */
  readonly releaseOnStop?: boolean;
  readonly groupSuffix?: string;
  readonly callbacks: LeaderCallbacks;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly random?: () => number;
}

/** Acquire attempts are spread by up to this fraction of the retry period, as upstream does. */
export const JITTER_FACTOR = 1.2;

export class LeaderElector {
  private readonly o: Required<Pick<LeaderElectorOptions, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs">> & LeaderElectorOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly apiVersion: string;
  private readonly stopping = new AbortController();
  /** The lease as last seen, and when (local time) it last changed: expiry never trusts the remote clock. */
  private observed: Lease | undefined;
  private observedAt = 0;
  /** When the last successful acquire or renew was sent. */
  private renewedAt = 0;
  private leading: AbortController | undefined;
  private lastLeader: string | undefined;
  private running: Promise<void> | undefined;

  constructor(options: LeaderElectorOptions) {
    const leaseDurationMs = options.leaseDurationMs ?? 15_000;
    const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    const retryPeriodMs = options.retryPeriodMs ?? 2_000;
    for (const [name, value] of [["leaseDurationMs", leaseDurationMs], ["renewDeadlineMs", renewDeadlineMs], ["retryPeriodMs", retryPeriodMs]] as const) {
      if (!Number.isFinite(value) || value <= 0) throw invalidOption(name, "> 0", value);
    }
    if (renewDeadlineMs > leaseDurationMs) throw invalidOption("renewDeadlineMs", `≤ leaseDurationMs (${leaseDurationMs})`, renewDeadlineMs);
    if (renewDeadlineMs <= JITTER_FACTOR * retryPeriodMs) {
      throw invalidOption("renewDeadlineMs", `> ${JITTER_FACTOR} × retryPeriodMs (${JITTER_FACTOR * retryPeriodMs})`, renewDeadlineMs);
    }
    for (const key of ["name", "namespace", "identity"] as const) {
      if (typeof options[key] !== "string" || options[key].length === 0) throw invalidOption(key, "to be a non-empty string", options[key]);
    }
    this.o = { ...options, leaseDurationMs, renewDeadlineMs, retryPeriodMs };
    this.clock = options.clock ?? systemClock;
    this.log = childLogger(options.logger ?? silentLogger(), { lease: `${options.namespace}/${options.name}`, identity: options.identity });
    this.random = options.random ?? Math.random;
    this.apiVersion = `${groupNames(options.groupSuffix ?? DEFAULT_GROUP_SUFFIX).coordination}/${LEASE_VERSION}`;
  }

  isLeader(): boolean {
    return this.leading !== undefined && !this.leading.signal.aborted;
  }

  /** The holder last observed (undefined before the first observation or when the lease is free). */
  leader(): string | undefined {
    return this.lastLeader;
  }

  /** Campaigns until `signal` aborts or `stop()`: acquire, lead, and after a loss campaign again. */
  start(signal?: AbortSignal): void {
    if (this.running) throw new PlatformError("INVALID_ARGUMENT", "leader elector is already started");
    if (signal?.aborted) this.stopping.abort();
    else signal?.addEventListener("abort", () => this.stopping.abort(), { once: true });
    this.running = this.run();
  }

  /** Stops campaigning; a leader stops its work and (unless disabled) releases the lease. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  private async run(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      if (await this.attempt(signal)) {
        await this.lead(signal);
      } else {
        await this.clock.sleep(this.o.retryPeriodMs * (1 + JITTER_FACTOR * this.random()), signal);
      }
    }
  }

  /** Holds leadership: renews every retry period; steps down the moment a renewal deadline passes unrenewed. */
  private async lead(signal: AbortSignal): Promise<void> {
    const leading = new AbortController();
    this.leading = leading;
    this.log.info("became leader");
    this.callback("onStartedLeading", () => this.o.callbacks.onStartedLeading(leading.signal));
    let lost = false;
    while (!signal.aborted) {
      const deadline = this.renewedAt + this.o.renewDeadlineMs;
      const wait = Math.min(this.o.retryPeriodMs, deadline - this.clock.now());
      if (wait > 0) await this.clock.sleep(wait, signal);
      if (signal.aborted) break;
      const left = deadline - this.clock.now();
      if (left <= 0) {
        lost = true;
        break;
      }
      const renewed = await this.attempt(signal, left);
      if (!renewed && !signal.aborted && this.heldByOther()) {
        lost = true;
        break;
      }
    }
    leading.abort();
    this.leading = undefined;
    if (lost) this.log.warn({ renewDeadlineMs: this.o.renewDeadlineMs }, "leadership lost");
    else if (this.o.releaseOnStop !== false) await this.release();
    this.callback("onStoppedLeading", () => this.o.callbacks.onStoppedLeading?.());
  }

  /** One try to acquire or renew; false when another holds an unexpired lease, on a conflict, or on any error. */
  private async attempt(outer: AbortSignal, timeoutMs = this.o.renewDeadlineMs): Promise<boolean> {
    const controller = new AbortController();
    const abort = (): void => controller.abort();
    outer.addEventListener("abort", abort, { once: true });
    const cancel = this.clock.setTimer(timeoutMs, abort);
    const aborted = new Promise<false>((resolve) => controller.signal.addEventListener("abort", () => resolve(false), { once: true }));
    // The server may apply the write at any moment after it is sent, so the renew deadline counts from the send.
    const sentAt = this.clock.now();
    try {
      // A request that never answers must not outlive the renew deadline.
      const ok = await Promise.race([this.tryAcquireOrRenew(controller.signal), aborted]);
      if (ok) this.renewedAt = sentAt;
      return ok;
    } catch (err) {
      this.log.info({ err: isPlatformError(err) ? { code: err.code, message: err.message } : String(err) }, "lease update failed");
      return false;
    } finally {
      cancel();
      outer.removeEventListener("abort", abort);
      controller.abort();
    }
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = new Date(this.clock.now());
    const { client, name, namespace, identity } = this.o;
    let current: Lease;
    try {
      current = await client.get(name, { namespace, signal });
    } catch (err) {
      if (!isPlatformError(err, "NOT_FOUND")) throw err;
      const fresh: Lease = {
        apiVersion: this.apiVersion,
        kind: LEASE_KIND,
        metadata: { name, namespace },
        spec: this.spec(now, { holderIdentity: identity, acquireTime: formatMicroTime(now), leaseTransitions: 0 }),
      };
      try {
        this.observe(await client.create(fresh, { namespace, signal }));
        return true;
      } catch (createErr) {
        if (isPlatformError(createErr, "ALREADY_EXISTS")) return false;
        throw createErr;
      }
    }
    this.observe(current);
    const holder = current.spec?.holderIdentity ?? "";
    if (holder !== "" && holder !== identity && !this.expired()) return false;
    const mine = holder === identity;
    const spec = this.spec(now, {
      holderIdentity: identity,
      acquireTime: mine ? (current.spec?.acquireTime ?? formatMicroTime(now)) : formatMicroTime(now),
      leaseTransitions: (current.spec?.leaseTransitions ?? 0) + (mine ? 0 : 1),
    });
    try {
      this.observe(await client.update({ ...current, metadata: { ...current.metadata }, spec }, { signal }));
      return true;
    } catch (err) {
      if (isPlatformError(err, "CONFLICT")) return false;
      throw err;
    }
  }

  private spec(now: Date, fields: Pick<LeaseSpec, "holderIdentity" | "acquireTime" | "leaseTransitions">): LeaseSpec {
    return { ...fields, leaseDurationSeconds: Math.max(1, Math.ceil(this.o.leaseDurationMs / 1000)), renewTime: formatMicroTime(now) };
  }

  /** Records the lease; the local observation time moves only when the record changed. */
  private observe(lease: Lease): void {
    const changed =
      !this.observed ||
      this.observed.metadata.resourceVersion !== lease.metadata.resourceVersion ||
      JSON.stringify(this.observed.spec ?? {}) !== JSON.stringify(lease.spec ?? {});
    this.observed = lease;
    if (changed) this.observedAt = this.clock.now();
    const holder = lease.spec?.holderIdentity || undefined;
    if (holder !== this.lastLeader) {
      this.lastLeader = holder;
      if (holder !== undefined) this.callback("onNewLeader", () => this.o.callbacks.onNewLeader?.(holder));
    }
  }

  private expired(): boolean {
    const seconds = this.observed?.spec?.leaseDurationSeconds;
    const durationMs = seconds && seconds > 0 ? seconds * 1000 : this.o.leaseDurationMs;
    return this.observedAt + durationMs <= this.clock.now();
  }

  private heldByOther(): boolean {
    const holder = this.observed?.spec?.holderIdentity ?? "";
    return holder !== "" && holder !== this.o.identity;
  }

  /** Hands the lease back: empty holder and a one-second duration, so the next candidate need not wait. */
  private async release(): Promise<void> {
    const lease = this.observed;
    if (!lease || lease.spec?.holderIdentity !== this.o.identity) return;
    const now = formatMicroTime(new Date(this.clock.now()));
    const spec: LeaseSpec = { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
    try {
      this.observe(await this.o.client.update({ ...lease, metadata: { ...lease.metadata }, spec }));
      this.log.info("released the lease");
    } catch (err) {
      this.log.warn({ err: isPlatformError(err) ? { code: err.code, message: err.message } : String(err) }, "could not release the lease");
    }
  }

  private callback(name: string, fn: () => unknown): void {
    const report = (err: unknown): void => this.log.error({ err: err instanceof Error ? err.message : String(err), callback: name }, "leader callback failed");
    try {
      const out = fn();
      if (out instanceof Promise) out.catch(report);
    } catch (err) {
      report(err);
    }
  }
}
