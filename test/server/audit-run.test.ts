/**
 * One audit run shares the thread with reviews: between pods it asks whether its slice is spent
 * and, when it is, yields to the event loop, so that work queued meanwhile (a review) runs before
 * the rest of the page.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { AuditSettings } from '../../src/audit/audit-rules.js';
import { podsAsOnePage, runAudit } from '../../src/server/audit-run.js';
import { parseAuditInterval } from '../../src/server/periodic-audit.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { auditNamespaces, auditNodes, storedPod } from '../support/audit-fixtures.js';
import { compilePolicy, labelPolicySpec, namespace } from '../tenancy/tenancy-fixtures.js';

const settings: AuditSettings = {
  gates: defaultFeatureGates,
  enabled: new Set(allPluginNames),
  policies: emptyPolicySet,
  exclusion: { names: new Set(), label: undefined },
  all: false,
};
const facts = staticClusterFacts({ namespaces: auditNamespaces, nodes: auditNodes });
const pods = Array.from({ length: 100 }, (_, i) => storedPod({ namespace: 'shared', name: `p-${i}`, node: 'plain' }));

describe('an audit run yields to other work', () => {
  it('work queued during a page runs before the page is done, once the slice is spent', async () => {
    let judged = 0;
    let ranAt: number | undefined;
    // A "review" queued for the next turn of the event loop, as a request arriving would be.
    setImmediate(() => {
      ranAt = judged;
    });
    const result = await runAudit(podsAsOnePage(pods), facts, settings, {
      // A slice of 10 pods: the clock is replaced by a count, so the test does not depend on speed.
      shouldYield: () => {
        judged += 1;
        return judged % 10 === 0;
      },
      yieldNow: () => nextTurn(),
    });
    assert.equal(result.summary.audited, 100);
    assert.ok(ranAt !== undefined && ranAt <= 10, `the queued work ran after ${String(ranAt)} pods`);
  });

  it('without a budget the run does not yield within a page (the offline command)', async () => {
    let ran = false;
    setImmediate(() => {
      ran = true;
    });
    let ranDuring = false;
    await runAudit(
      async ({ onPage }) => {
        await onPage(pods);
        ranDuring = ran;
      },
      facts,
      settings,
    );
    assert.equal(ranDuring, false);
  });
});

describe("an audit run reads DRA claims after the pods (the periodic audit's claimPages)", () => {
  const deviceKey = 'gpu.example.com/dedicated';
  const deviceSettings: AuditSettings = {
    ...settings,
    policies: createPolicySet([compilePolicy('gpus', { ...labelPolicySpec(), deviceTaint: { key: deviceKey, effect: 'NoSchedule' } })]).set,
  };
  const teamFacts = staticClusterFacts({ namespaces: [namespace('team-a', { dedicated: 'a' })], nodes: [] });
  const claim = (name: string, value: string): unknown => {
    const tolerations = [{ key: deviceKey, operator: 'Equal', value, effect: 'NoSchedule' }];
    return {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name, namespace: 'team-a' },
      spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu', tolerations } }] } },
      status: { allocation: { devices: { results: [{ request: 'gpu', driver: 'd', pool: 'p', device: 'g', tolerations }] } } },
    };
  };
  const teamPod = storedPod({ namespace: 'team-a', name: 'p', node: '' });

  it('foreign-device-toleration from claimPages: the claim is counted in its namespace, no pod is counted for it', async () => {
    const result = await runAudit(podsAsOnePage([teamPod]), teamFacts, deviceSettings, {
      claimPages: podsAsOnePage([claim('stolen', 'b'), claim('own', 'a')]),
    });
    assert.deepEqual(
      result.violations
        .filter((violation) => violation.kind === 'ResourceClaim')
        .map(({ namespace: ns, name, rule }) => ({ ns, name, rule })),
      [{ ns: 'team-a', name: 'stolen', rule: 'foreign-device-toleration' }],
    );
    assert.deepEqual(
      result.counts.filter((count) => count.rule === 'foreign-device-toleration'),
      [{ namespace: 'team-a', rule: 'foreign-device-toleration', policy: 'gpus', count: 1 }],
    );
    assert.equal(result.summary.audited, 1, 'the one pod; claims are not pods');
  });

  it("a restart of the claims' list (410 Gone) forgets the claims seen before it, not the pods", async () => {
    const result = await runAudit(podsAsOnePage([teamPod]), teamFacts, deviceSettings, {
      claimPages: async ({ onPage, onRestart }) => {
        await onPage([claim('gone', 'b')]);
        onRestart();
        await onPage([claim('stolen', 'b')]);
      },
    });
    assert.deepEqual(
      result.violations.filter((violation) => violation.kind === 'ResourceClaim').map(({ name }) => name),
      ['stolen'],
    );
    assert.equal(result.counts.find((count) => count.rule === 'foreign-device-toleration')?.count, 1);
    assert.equal(result.summary.audited, 1);
  });

  it('claims are bounded like pods: keepPerNamespace findings kept, every one counted', async () => {
    const claims = Array.from({ length: 30 }, (_, i) => claim(`c-${String(i).padStart(2, '0')}`, 'b'));
    const result = await runAudit(podsAsOnePage([]), teamFacts, deviceSettings, {
      claimPages: podsAsOnePage(claims),
      keepPerNamespace: 10,
    });
    assert.equal(result.violations.length, 10);
    assert.equal(result.violations[0]?.name, 'c-00');
    assert.equal(result.counts.find((count) => count.rule === 'foreign-device-toleration')?.count, 30);
  });

  it('a claim too large to read is undecided as a ResourceClaim, and the run goes on', async () => {
    const result = await runAudit(podsAsOnePage([]), teamFacts, deviceSettings, {
      claimPages: async ({ onPage, onSkipped }) => {
        onSkipped({ namespace: 'team-a', name: 'huge', maxBytes: 100 });
        await onPage([claim('stolen', 'b')]);
      },
    });
    assert.deepEqual(
      result.undecided.map(({ namespace: ns, name, kind }) => ({ ns, name, kind })),
      [{ ns: 'team-a', name: 'huge', kind: 'ResourceClaim' }],
    );
    assert.match(result.undecided[0]!.message, /^resourceclaim "team-a\/huge" is more than 100 bytes of JSON/);
    assert.equal(result.summary.undecided, 1);
    assert.equal(result.summary.audited, 0);
    assert.equal(result.violations.length, 1);
  });
});

describe('--audit-interval', () => {
  const rows: { raw: string; ms?: number; error?: RegExp }[] = [
    { raw: '1h', ms: 3_600_000 },
    { raw: '30m', ms: 1_800_000 },
    { raw: '1h30m', ms: 5_400_000 },
    { raw: '90s', ms: 90_000 },
    { raw: '', error: /is not a duration/ },
    { raw: '1d', error: /is not a duration/ },
    { raw: '10', error: /is not a duration/ },
    { raw: '0s', error: /shorter than 1s/ },
    { raw: '-5m', error: /is not a duration/ },
  ];
  for (const row of rows) {
    it(`${JSON.stringify(row.raw)} → ${row.ms === undefined ? 'refused' : `${row.ms} ms`}`, () => {
      if (row.ms !== undefined) assert.equal(parseAuditInterval(row.raw), row.ms);
      else assert.throws(() => parseAuditInterval(row.raw), row.error ?? /./);
    });
  }
});
