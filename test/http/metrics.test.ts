// What the metrics promise the alerts built on them (deploy/helm/tolerator/files/monitoring).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMetrics } from '../../src/http/metrics.js';

describe('createMetrics', () => {
  it('exports every reload result at 0 before any reload, so that increase() sees the first failure', async () => {
    const metrics = createMetrics({ collectProcessMetrics: false });
    for (const name of ['tolerator_certificate_reloads_total', 'tolerator_client_ca_reloads_total']) {
      const text = await metrics.registry.getSingleMetricAsString(name);
      assert.match(text, new RegExp(`^${name}\\{result="success"\\} 0$`, 'm'));
      assert.match(text, new RegExp(`^${name}\\{result="failure"\\} 0$`, 'm'));
    }
  });

  it('counts a reload failure from 0 to 1', async () => {
    const metrics = createMetrics({ collectProcessMetrics: false });
    metrics.certificateReloads.inc({ result: 'failure' });
    const text = await metrics.registry.getSingleMetricAsString('tolerator_certificate_reloads_total');
    assert.match(text, /^tolerator_certificate_reloads_total\{result="failure"\} 1$/m);
    assert.match(text, /^tolerator_certificate_reloads_total\{result="success"\} 0$/m);
  });

  it('exports tolerator_build_info at 1 with the version, revision and Node.js version as labels', async () => {
    const metrics = createMetrics({
      collectProcessMetrics: false,
      buildInfo: { version: '0.1.0', revision: '0123abc', nodeVersion: 'v20.20.2' },
    });
    const text = await metrics.registry.getSingleMetricAsString('tolerator_build_info');
    assert.match(text, /^tolerator_build_info\{version="0\.1\.0",revision="0123abc",node_version="v20\.20\.2"\} 1$/m);
  });

  it('exports the review workers decided at start and those ready now as tolerator_review_workers', async () => {
    const metrics = createMetrics({ collectProcessMetrics: false });
    const before = await metrics.registry.getSingleMetricAsString('tolerator_review_workers');
    assert.match(before, /^tolerator_review_workers\{state="configured"\} 0$/m, 'no pool (or --review-workers 0): 0');
    let ready = 2;
    metrics.readGaugesFrom({ reviewWorkers: () => ({ configured: 2, ready }) });
    ready = 1;
    const text = await metrics.registry.getSingleMetricAsString('tolerator_review_workers');
    assert.match(text, /^tolerator_review_workers\{state="configured"\} 2$/m);
    assert.match(text, /^tolerator_review_workers\{state="ready"\} 1$/m, 'read at the scrape: one being replaced');
  });
});
