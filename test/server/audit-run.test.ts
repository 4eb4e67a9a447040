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
import { auditNamespaces, auditNodes, storedPod } from '../support/audit-fixtures.js';

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
