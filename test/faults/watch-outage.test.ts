/**
 * The API server goes away under the webhook: the informers' connection is cut and new connections
 * are refused (a TCP relay in front of the fake API server is switched off), then it comes back.
 * Decisions that depend on a namespace annotation (PodTolerationRestriction's
 * `scheduler.alpha.kubernetes.io/defaultTolerations`) keep being made from the cache throughout,
 * readiness stays true as src/kube/informers.ts documents, and once the server is back the cache
 * catches up with what changed meanwhile.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import jsonpatch from 'fast-json-patch';
import type { Pipeline } from '../../src/admission/pipeline.js';
import { parseAdmissionReview } from '../../src/admission/review.js';
import type { Toleration } from '../../src/api/types.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { pipelineFor } from '../../src/admission/pipeline-settings.js';
import { startInformers } from '../../src/kube/informers.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';
import { FakeApiServer } from '../support/fake-api-server.js';
import { silentLogger } from '../support/harness.js';
import { TcpSwitch } from '../support/tcp-switch.js';

/** Restarts wait 20–100 ms here; "eventually" allows 5 s, 50× the slowest restart. */
const backoff = { initialMs: 20, maxMs: 100 };
const eventuallyMs = 5_000;
const defaultsAnnotation = 'scheduler.alpha.kubernetes.io/defaultTolerations';

async function eventually(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + eventuallyMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${eventuallyMs} ms waiting until ${what}`);
    await sleep(10);
  }
}

function kubeConfigFor(url: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
    users: [{ name: 'anonymous' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'anonymous' }],
    currentContext: 'fake',
  });
  return kc;
}

function batchNamespace(value: string): { metadata: { name: string; annotations: Record<string, string> } } {
  return {
    metadata: {
      name: 'batch',
      annotations: { [defaultsAnnotation]: JSON.stringify([{ key: 'example.com/batch', operator: 'Equal', value, effect: 'NoSchedule' }]) },
    },
  };
}

/** A BestEffort pod CREATE in `namespace`: the only toleration with a value comes from the namespace. */
function podCreate(namespace: string): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'outage-1',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace,
      operation: 'CREATE',
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'job', namespace },
        spec: { containers: [{ name: 'job', image: 'job:1' }] },
      },
    },
  });
}

/** The value of the namespace-default toleration the mutating webhook adds, if any. */
async function namespaceDefault(pipeline: Pipeline): Promise<string | undefined> {
  const parsed = parseAdmissionReview(podCreate('batch'));
  const { decision } = await pipeline.review(parsed, ['mutate']);
  assert.equal(decision.allowed, true);
  const pod = jsonpatch.applyPatch(
    structuredClone(parsed.attributes.object),
    structuredClone(decision.patch ?? []) as jsonpatch.Operation[],
    true,
    true,
  ).newDocument;
  const tolerations = (pod?.spec as { tolerations?: Toleration[] } | undefined)?.tolerations ?? [];
  return tolerations.find((toleration) => toleration.key === 'example.com/batch')?.value;
}

describe('the watch connection cut and restored', () => {
  it('keeps deciding from the cache while the API server refuses connections, stays ready, and catches up after', async (t) => {
    const fake = await FakeApiServer.start();
    fake.put('namespaces', batchNamespace('v1'));
    const relay = await TcpSwitch.start(Number(new URL(fake.url).port));
    const facts = startInformers({ kubeConfig: kubeConfigFor(relay.url), logger: silentLogger, backoff });
    t.after(async () => {
      await facts.stop();
      await relay.close();
      await fake.close();
    });
    const pipeline = pipelineFor(readAdmissionSettings(parseFlags([], admissionFlags)), facts, () => emptyPolicySet);

    await eventually(() => facts.isSynced(), 'the caches have synced');
    await eventually(() => fake.openWatchCount('namespaces') === 1, 'the namespace watch is open');
    assert.equal(await namespaceDefault(pipeline), 'v1', 'the decision before the outage');

    await relay.cut();
    await eventually(() => facts.restarts() >= 3, 'three restarts have failed against refused connections');
    for (let i = 0; i < 5; i++) {
      assert.equal(await namespaceDefault(pipeline), 'v1', 'the decision during the outage comes from the cache');
      assert.equal(facts.isSynced(), true, 'readiness does not flap while the watch is down');
      await sleep(20);
    }
    const getsDuringOutage = fake.count({ verb: 'get' });

    // A namespace the cache never held cannot be read now: the review is "could not decide"
    // (HTTP 500, failurePolicy), never a decision made as if the namespace had no annotations.
    await assert.rejects(
      pipeline.review(parseAdmissionReview(podCreate('created-during-outage')), ['mutate']),
      /reading Namespace "created-during-outage" from the API server failed/,
    );

    // The annotation changes while the webhook cannot see it; then the server is reachable again.
    fake.put('namespaces', batchNamespace('v2'));
    assert.equal(await namespaceDefault(pipeline), 'v1', 'the change is not visible through a cut connection');
    await relay.restore();
    await eventually(async () => (await namespaceDefault(pipeline)) === 'v2', 'the restarted watch delivers the change');
    assert.equal(facts.isSynced(), true);
    assert.equal(fake.count({ verb: 'get' }), getsDuringOutage, 'cached namespaces were never read one by one');
  });
});
