/**
 * The end-to-end case, through `tolerator serve` as a process: with a cluster (here a fake
 * API server named by --kubeconfig) whose /metrics reports
 * `kubernetes_feature_enabled{name="TaintTolerationComparisonOperators"} 1` and no flag, a pod
 * with a `Gt` toleration is allowed; with `0`, it is refused with the API server's message; and
 * /metrics says where the gate came from (`source="cluster-metrics"`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadReviewFixture } from '../support/harness.js';
import { callServe, startServe, type ServedProcess } from '../support/serve-process.js';
import { FakeApiServer } from '../support/fake-api-server.js';

// The development certificate is self-signed for localhost: trust it for these calls only.
const agent = new Agent({ keepAlive: false, rejectUnauthorized: false });

function call(port: number, path: string, body?: string): Promise<{ status: number; body: string }> {
  return callServe(agent, port, path, body);
}

/** Ready means the caches synced and the first read of the cluster's gates is over. */
async function untilReady(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await call(port, '/readyz')).status !== 200) {
    assert.ok(Date.now() < deadline, 'serve became ready');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const gtReview = JSON.stringify(loadReviewFixture('gt-gate-off-create').review);

describe('tolerator serve with a cluster and no --feature-gates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-gates-'));
  const fakes: FakeApiServer[] = [];
  const processes: ServedProcess[] = [];

  /** A fake API server reporting the gate as `value`, and serve started against it (both at once for both values). */
  async function cluster(value: '0' | '1'): Promise<ServedProcess> {
    const fake = await FakeApiServer.start();
    fakes.push(fake);
    fake.reportFeatureGates({ TaintTolerationComparisonOperators: value, PodLevelResources: true });
    const kubeconfig = join(dir, `kubeconfig-${value}.json`);
    writeFileSync(kubeconfig, fake.kubeConfig().exportConfig());
    const served = await startServe(['--kubeconfig', kubeconfig]);
    processes.push(served);
    await untilReady(served.port);
    return served;
  }

  let on: ServedProcess;
  let off: ServedProcess;
  before(async () => {
    [on, off] = await Promise.all([cluster('1'), cluster('0')]);
  });
  after(async () => {
    for (const served of processes) served.child.kill('SIGKILL');
    await Promise.all(fakes.map((fake) => fake.close()));
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('allows a Gt toleration when /metrics reports the gate at 1, and /metrics says source="cluster-metrics"', async () => {
    const answer = await call(on.port, '/validate', gtReview);
    assert.equal(answer.status, 200);
    assert.equal((JSON.parse(answer.body) as { response: { allowed: boolean } }).response.allowed, true);
    const metrics = await call(on.port, '/metrics');
    assert.match(metrics.body, /^tolerator_feature_gate_enabled\{name="TaintTolerationComparisonOperators",source="cluster-metrics"\} 1$/m);
    assert.doesNotMatch(metrics.body, /tolerator_feature_gate_enabled\{name="TaintTolerationComparisonOperators",source="default"\}/);
    assert.ok(
      on.logs.some((entry) => entry.msg === 'feature gate TaintTolerationComparisonOperators=true from cluster-metrics'),
      'the change is logged',
    );
  });

  it("refuses it with the API server's message when /metrics reports 0", async () => {
    const answer = await call(off.port, '/validate', gtReview);
    const response = (JSON.parse(answer.body) as { response: { allowed: boolean; status: { code: number; message: string } } }).response;
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 422);
    assert.equal(
      response.status.message,
      'Pod "gauge-0" is invalid: spec.tolerations[2].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
    );
    const metrics = await call(off.port, '/metrics');
    assert.match(metrics.body, /^tolerator_feature_gate_enabled\{name="TaintTolerationComparisonOperators",source="cluster-metrics"\} 0$/m);
  });
});
