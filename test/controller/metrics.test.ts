// ControllerMetrics as a scrape reads it: work queues' depth, adds and latencies, and the per-CSR counters by label set.
import { describe, expect, it } from "vitest";
import { ControllerMetrics } from "../../src/controller/metrics.js";
import { WorkQueue } from "../../src/controller/workqueue.js";
import { FakeClock } from "../../src/time/fake-clock.js";

const SIGNER = "platform.io/apiserver-client-nodeagent";

describe("ControllerMetrics", () => {
  it("reports each work queue's depth as it was last, its adds and its waits, by queue name", async () => {
    const m = new ControllerMetrics();
    const clock = new FakeClock();
    const a = new WorkQueue({ name: "csrsigning", clock, metrics: m.workQueue() });
    const b = new WorkQueue({ name: "csrapproving", clock, metrics: m.workQueue() });
    for (const key of ["x", "y", "z"]) a.add(key);
    b.add("x");
    await clock.advance(250);
    expect(a.tryGet()).toBe("x");
    const text = (await m.scrape()).body;
    expect(text).toContain('platform_ca_workqueue_depth{name="csrsigning"} 2');
    expect(text).toContain('platform_ca_workqueue_depth{name="csrapproving"} 1');
    expect(text).toContain('platform_ca_workqueue_adds_total{name="csrsigning"} 3');
    expect(text).toContain('platform_ca_workqueue_adds_total{name="csrapproving"} 1');
    expect(text).toContain('platform_ca_workqueue_queue_duration_seconds_bucket{le="0.25",name="csrsigning"} 1');
    expect(text).toContain('platform_ca_workqueue_queue_duration_seconds_count{name="csrsigning"} 1');
    expect(text).not.toContain('platform_ca_workqueue_queue_duration_seconds_count{name="csrapproving"}');
  });

  it("counts issuance, failures and reviews per label set, the signers' counters present at 0 from the start", async () => {
    const m = new ControllerMetrics({ signers: { list: () => [{ signerName: SIGNER, trustAnchors: () => [] }] } });
    expect((await m.scrape()).body).toContain(`platform_ca_csr_signed_total{signer="${SIGNER}"} 0`);
    const labels = { signer: SIGNER };
    m.csrSigned.inc(SIGNER, labels);
    m.csrSigned.inc(SIGNER, labels);
    m.signingDuration.observe(SIGNER, labels, 0.0004);
    for (const reason of ["SignerValidationFailure", "SignerValidationFailure", "Other"]) m.csrFailed.inc(`${SIGNER}\u0000${reason}`, { signer: SIGNER, reason });
    m.approvalReviews.inc("reused", { result: "reused" });
    m.eventResult()("written");
    const text = (await m.scrape()).body;
    expect(text).toContain(`platform_ca_csr_signed_total{signer="${SIGNER}"} 2`);
    expect(text).toContain(`platform_ca_csr_signing_duration_seconds_bucket{le="0.0005",signer="${SIGNER}"} 1`);
    expect(text).toContain(`platform_ca_csr_failed_total{signer="${SIGNER}",reason="SignerValidationFailure"} 2`);
    expect(text).toContain(`platform_ca_csr_failed_total{signer="${SIGNER}",reason="Other"} 1`);
    expect(text).toMatch(/^platform_ca_csr_approval_reviews_total\{result="allowed"\} 0$/m);
    expect(text).toMatch(/^platform_ca_csr_approval_reviews_total\{result="reused"\} 1$/m);
    expect(text).toMatch(/^platform_ca_events_total\{result="written"\} 1$/m);
    expect(text).toMatch(/^platform_ca_events_total\{result="dropped"\} 0$/m);
  });
});
