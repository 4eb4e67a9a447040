/**
 * What the periodic audit of serve holds while it runs: a tenant decides how many violating pods
 * its namespace has (a Warn policy lets them in, old pods stay), so the findings it keeps must not
 * grow with them. Compared at n and 4n violating pods in one namespace, in one test: the findings
 * held stay below the cap's bound at both, the counts stay exact, and the work (comparisons)
 * grows 4-fold. And for a small cluster, the metrics and the policy reports are what they are when
 * every finding is kept (`tolerator audit`'s mode).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import {
  auditRuleNames,
  compareViolations,
  type AuditRuleName,
  type AuditSettings,
  type AuditViolation,
} from '../../src/audit/audit-rules.js';
import { AuditCollector, violationCounts, type AuditResult } from '../../src/audit/audit-summary.js';
import { buildPolicyReports, maxResultsPerReport, reportApis } from '../../src/audit/policy-reports.js';
import { SmallestPerNamespace } from '../../src/audit/smallest-per-namespace.js';
import { podsAsOnePage, runAudit } from '../../src/server/audit-run.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { allAuditPods, auditNamespaces, auditNodes, policiesDir } from '../support/audit-fixtures.js';

const [wgpolicy] = reportApis;
if (wgpolicy === undefined) throw new Error('no report API');

/** Three rules, in the rules' (report) order. */
const rulesBroken: readonly AuditRuleName[] = auditRuleNames.filter((rule) =>
  ['missing-default-tolerations', 'missing-memory-pressure', 'missing-pair'].includes(rule),
);

/** Pod i of namespace `shop` breaking three rules (one under a policy), fed last-first: the worst order for keeping the first. */
function podFindings(i: number): AuditViolation[] {
  const name = `web-${String(i).padStart(7, '0')}`;
  return rulesBroken.map((rule) => ({
    namespace: 'shop',
    name,
    node: 'n1',
    rule,
    message: `${rule} on ${name}`,
    ...(rule === 'missing-pair' ? { policy: 'dedicated-by-namespace-label' } : {}),
  }));
}

/** An audit of n violating pods in one namespace, keeping what serve keeps; the most findings held at any moment. */
function collect(n: number): { result: AuditResult; peakHeld: number } {
  const collector = new AuditCollector({ keepPerNamespace: maxResultsPerReport });
  let peakHeld = 0;
  for (let i = n - 1; i >= 0; i--) {
    collector.add({ violations: podFindings(i) });
    peakHeld = Math.max(peakHeld, collector.heldCount);
  }
  return { result: collector.result(), peakHeld };
}

describe('the periodic audit holds a bounded number of findings per namespace', () => {
  it('n = 2,000 against 4n violating pods in one namespace: findings held do not grow, counts stay exact', () => {
    const n = 2_000;
    const small = collect(n);
    const large = collect(4 * n);
    // A namespace holds fewer than 2 × cap findings at any moment (smallest-per-namespace.ts), whatever n.
    assert.ok(small.peakHeld < 2 * maxResultsPerReport, `held ${small.peakHeld} at n`);
    assert.ok(large.peakHeld < 2 * maxResultsPerReport, `held ${large.peakHeld} at 4n`);
    for (const [size, { result }] of [
      [n, small],
      [4 * n, large],
    ] as const) {
      assert.equal(result.violations.length, maxResultsPerReport);
      // The first findings in report order: pods web-0000000 … in name order, three rules each.
      assert.deepEqual(
        result.violations,
        Array.from({ length: maxResultsPerReport / 2 }, (_, i) => podFindings(i))
          .flat()
          .slice(0, maxResultsPerReport),
      );
      assert.deepEqual(
        violationCounts(result).map(({ rule, count }) => [rule, count]),
        rulesBroken.map((rule) => [rule, size]),
      );
      assert.equal(result.summary.audited, size);
      assert.equal(result.summary.byRule['missing-pair'], size);
      const report = buildPolicyReports(wgpolicy, result, () => 'Warn', new Date(0)).get('shop');
      assert.ok(report !== undefined);
      assert.deepEqual(report.summary, { pass: 0, fail: 2 * size, warn: size, error: 0, skip: 0 });
      assert.equal((report.results as unknown[]).length, maxResultsPerReport);
    }
  });

  it('keeping the first cap of each namespace costs comparisons linear in the items: 4n items, 4 times the work', () => {
    const cap = maxResultsPerReport;
    const comparisons = (n: number): number => {
      let count = 0;
      const kept = new SmallestPerNamespace<AuditViolation>(cap, (a, b) => {
        count += 1;
        return compareViolations(a, b);
      });
      for (let i = n - 1; i >= 0; i--) for (const finding of podFindings(i)) kept.add(finding);
      assert.equal(kept.sorted().length, cap);
      return count;
    };
    const n = 4_000;
    const ratio = comparisons(4 * n) / comparisons(n);
    // Each cut sorts 2 × cap items and drops cap: O(log cap) comparisons per item, a fixed amount
    // for a fixed cap, so 4n items take 4 times the comparisons (and a little less: the last sort
    // is the same at both sizes). Quadratic would be 16.
    assert.ok(ratio <= 4.2, `comparisons grew ×${ratio.toFixed(2)} for 4× the items`);
  });

  it('keeps every item with cap Infinity (the command), and refuses a cap below 1', () => {
    const kept = new SmallestPerNamespace<AuditViolation>(Infinity, compareViolations);
    for (let i = 999; i >= 0; i--) for (const finding of podFindings(i)) kept.add(finding);
    assert.equal(kept.sorted().length, 3_000);
    assert.equal(kept.heldCount, 3_000);
    assert.throws(() => new SmallestPerNamespace<AuditViolation>(0, compareViolations), RangeError);
  });
});

describe('keeping the first findings of each namespace changes no published value', () => {
  const settings: AuditSettings = {
    gates: defaultFeatureGates,
    enabled: new Set(allPluginNames),
    policies: loadPolicyDirectory(policiesDir).set,
    exclusion: { names: new Set(['kube-system', 'kube-node-lease', 'tolerator-system']), label: undefined },
    all: false,
  };
  const facts = staticClusterFacts({ namespaces: auditNamespaces, nodes: auditNodes });
  const enforcement = (policy: string): 'Warn' | undefined => (policy === 'dedicated-by-namespace-label' ? 'Warn' : undefined);
  const audit = (keepPerNamespace?: number): Promise<AuditResult> =>
    runAudit(podsAsOnePage(allAuditPods()), facts, settings, { keepPerNamespace });

  for (const keep of [maxResultsPerReport, 2, 1]) {
    it(`the fixture cluster, keeping ${keep} per namespace: the same metrics, report summaries and first results as keeping all`, async () => {
      const all = await audit();
      const kept = await audit(keep);
      assert.ok(all.violations.length > 0);
      assert.deepEqual(kept.summary, all.summary);
      assert.deepEqual(kept.counts, all.counts);
      // tolerator_audit_violations as the findings themselves count it.
      const byRuleAndNamespace = new Map<string, number>();
      for (const { rule, namespace } of all.violations) {
        byRuleAndNamespace.set(`${rule} ${namespace}`, (byRuleAndNamespace.get(`${rule} ${namespace}`) ?? 0) + 1);
      }
      assert.deepEqual(
        new Map(violationCounts(kept).map(({ rule, namespace, count }) => [`${rule} ${namespace}`, count])),
        byRuleAndNamespace,
      );
      const fromAll = buildPolicyReports(wgpolicy, all, enforcement, new Date(0));
      const fromKept = buildPolicyReports(wgpolicy, kept, enforcement, new Date(0));
      assert.deepEqual([...fromKept.keys()], [...fromAll.keys()]);
      for (const [namespace, report] of fromAll) {
        const reduced = fromKept.get(namespace);
        assert.deepEqual(reduced?.summary, report.summary, namespace);
        assert.deepEqual(reduced?.results, (report.results as unknown[]).slice(0, keep), namespace);
      }
      // The summaries count every finding, whatever the results hold.
      const counted = [...fromKept.values()].reduce((sum, report) => {
        const summary = report.summary as { fail: number; warn: number };
        return sum + summary.fail + summary.warn;
      }, 0);
      assert.equal(counted, all.violations.length);
    });
  }
});
