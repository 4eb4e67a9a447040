/** `tolerator check`'s decisions (src/audit/install-check.ts), on observations made up here; test/e2e/check.e2e.ts runs them on a real install. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  countEndpoints,
  checkExitCode,
  featureGatesCheck,
  formatCheckLines,
  gateSamples,
  gaugeValue,
  policiesCheck,
  servingCertificateCheck,
  webhookConfigurationCheck,
  type ObservedWebhook,
} from '../../src/audit/install-check.js';

const now = new Date('2026-12-01T00:00:00Z');
const day = 86_400_000;
const webhook: ObservedWebhook = { name: 'validate.tolerator.dev', url: 'https://127.0.0.1:8443/validate', caBundle: 'PEM' };
const seen = (fields: Partial<{ verified: boolean; verifyError: string; hostMatches: boolean; daysLeft: number }>) => ({
  reached: true as const,
  verified: fields.verified ?? true,
  ...(fields.verifyError === undefined ? {} : { verifyError: fields.verifyError }),
  hostMatches: fields.hostMatches ?? true,
  host: '127.0.0.1',
  notAfter: new Date(now.getTime() + (fields.daysLeft ?? 60) * day),
});

describe('servingCertificateCheck', () => {
  const check = (fields: Parameters<typeof seen>[0], bundle = 'PEM') =>
    servingCertificateCheck('ValidatingWebhookConfiguration', { ...webhook, caBundle: bundle }, seen(fields), now);

  it('passes a verified certificate for the host, and says how long it has left', () => {
    const result = check({ daysLeft: 60.5 });
    assert.equal(result.ok, true);
    assert.match(result.message, /expires in 60 days/);
  });
  it('fails one with under 7 days left (renewal overdue), and one already expired', () => {
    assert.equal(check({ daysLeft: 6.9 }).ok, false);
    assert.equal(check({ daysLeft: 7 }).ok, true);
    const expired = check({ daysLeft: -1, verified: false, verifyError: 'CERT_HAS_EXPIRED' });
    assert.equal(expired.ok, false);
    assert.match(expired.message, /expired at 2026-11-30T00:00:00\.000Z/);
  });
  it('fails a certificate the caBundle does not verify, one for another host, and an empty caBundle', () => {
    assert.match(
      check({ verified: false, verifyError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }).message,
      /does not verify .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/,
    );
    assert.match(check({ hostMatches: false }).message, /is not for 127\.0\.0\.1/);
    assert.match(check({}, '').message, /empty caBundle/);
  });
});

describe('the other checks', () => {
  it('a missing configuration is named with the flag that names another', () => {
    const result = webhookConfigurationCheck('MutatingWebhookConfiguration', 'tolerator', undefined);
    assert.deepEqual([result.ok, result.message], [false, 'MutatingWebhookConfiguration tolerator not found']);
    assert.match(result.hint ?? '', /--mutating-webhook/);
  });
  it('feature gates: each difference named; a gate the API server does not report is off there', () => {
    const tolerator = new Map([
      ['TaintTolerationComparisonOperators', true],
      ['PodLevelResources', true],
    ]);
    const result = featureGatesCheck(tolerator, new Map([['PodLevelResources', true]]));
    assert.equal(result.ok, false);
    assert.equal(result.message, 'feature gates differ: TaintTolerationComparisonOperators: tolerator on, API server off');
    assert.equal(featureGatesCheck(tolerator, new Map([...tolerator])).ok, true);
    assert.equal(featureGatesCheck(new Map(), new Map()).ok, false);
  });
  it('policies: the ConfigMap count against what tolerator serves', () => {
    assert.equal(policiesCheck({ name: 'ns/cm', policies: 2 }, 2).ok, true);
    assert.match(policiesCheck({ name: 'ns/cm', policies: 2 }, 1).message, /holds 2 TenancyPolicy documents, tolerator serves 1/);
    assert.equal(policiesCheck('ConfigMap ns/cm not found', 0).ok, false);
  });
  it('exit 1 when one check failed, 0 when all passed or were skipped; ✓, ✗ with its hint, - for a skip', () => {
    const results = [
      { id: 'a', ok: true, message: 'fine' },
      { id: 'b', ok: true, skipped: true, message: 'nothing to do' },
      { id: 'c', ok: false, message: 'broken', hint: 'fix it' },
    ];
    assert.equal(checkExitCode(results), 1);
    assert.equal(checkExitCode(results.slice(0, 2)), 0);
    assert.equal(formatCheckLines(results), '✓ fine\n- nothing to do\n✗ broken\n    hint: fix it\n');
  });
  it('reads gate samples and a gauge from an exposition', () => {
    const text = [
      '# TYPE kubernetes_feature_enabled gauge',
      'kubernetes_feature_enabled{name="PodLevelResources",stage="BETA"} 1',
      'kubernetes_feature_enabled{name="TaintTolerationComparisonOperators",stage="ALPHA"} 0',
      'tolerator_policies_loaded 3',
    ].join('\n');
    assert.deepEqual(
      [...gateSamples(text, 'kubernetes_feature_enabled')],
      [
        ['PodLevelResources', true],
        ['TaintTolerationComparisonOperators', false],
      ],
    );
    assert.equal(gaugeValue(text, 'tolerator_policies_loaded'), 3);
    assert.equal(gaugeValue(text, 'tolerator_policies'), undefined);
  });
});

describe('countEndpoints', () => {
  it('slice.endpoints is not iterable: a slice with endpoints null (no ready pod) or absent counts nothing', () => {
    assert.deepEqual(countEndpoints([{ endpoints: null }, {}, null]), { ready: 0, notReady: 0 });
  });

  it('counts ready, not ready, and an unknown ready condition as ready (discovery/v1)', () => {
    const slice = { endpoints: [{ conditions: { ready: true } }, { conditions: { ready: false } }, { conditions: {} }, {}] };
    assert.deepEqual(countEndpoints([slice]), { ready: 3, notReady: 1 });
  });
});
