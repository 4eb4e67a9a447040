import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditViolation } from '../../src/audit/audit-rules.js';
import { AuditCollector, type AuditResult } from '../../src/audit/audit-summary.js';
import { buildPolicyReports, maxResultsPerReport, reportApis } from '../../src/audit/policy-reports.js';

const [wgpolicy] = reportApis;
if (wgpolicy === undefined) throw new Error('no report API');

const violation = (name: string, policy?: string): AuditViolation => ({
  namespace: 'shop',
  name,
  node: 'n1',
  rule: policy === undefined ? 'missing-memory-pressure' : 'missing-pair',
  message: 'm',
  ...(policy === undefined ? {} : { policy }),
});

/** The violations as an audit that kept them all gives them. */
function findings(violations: readonly AuditViolation[]): AuditResult {
  const collector = new AuditCollector();
  collector.add({ violations });
  return collector.result();
}

interface Result {
  policy: string;
  result: string;
  scored?: boolean;
}

describe('buildPolicyReports', () => {
  it('a Warn policy gives a warn result, which the report format defines as not scored; a refusal is a scored fail', () => {
    const enforcement = (policy: string): 'Deny' | 'Warn' | undefined =>
      policy === 'soft' ? 'Warn' : policy === 'hard' ? 'Deny' : undefined;
    const report = buildPolicyReports(
      wgpolicy,
      findings([violation('a', 'soft'), violation('b', 'hard'), violation('c')]),
      enforcement,
      new Date(0),
    ).get('shop');
    const results = report?.results as Result[];
    assert.deepEqual(
      results.map(({ policy, result, scored }) => ({ policy, result, scored })),
      [
        { policy: 'soft', result: 'warn', scored: false },
        { policy: 'hard', result: 'fail', scored: true },
        { policy: 'tolerator', result: 'fail', scored: true },
      ],
    );
    assert.deepEqual(report?.summary, { pass: 0, fail: 2, warn: 1, error: 0, skip: 0 });
  });

  it(`holds at most ${maxResultsPerReport} results; the summary counts them all`, () => {
    const many = Array.from({ length: maxResultsPerReport + 7 }, (_, i) => violation(`p${String(i).padStart(4, '0')}`));
    const report = buildPolicyReports(wgpolicy, findings(many), () => undefined, new Date(0)).get('shop');
    assert.equal((report?.results as Result[]).length, maxResultsPerReport);
    assert.deepEqual(report?.summary, { pass: 0, fail: maxResultsPerReport + 7, warn: 0, error: 0, skip: 0 });
  });
});
