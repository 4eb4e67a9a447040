/**
 * tolerator's table of gate defaults by version (src/api/feature-gate-history.ts) against the
 * real API server of the version under test (`npm run test:e2e -- --version 1.37`): started
 * without `--feature-gates`, its `/metrics` must report each gate tolerator reads
 * (`kubernetes_feature_enabled{name,stage}`) with the default and stage the table gives for the
 * version its `/version` reports, and must not report a gate the table says that version does not
 * have. The table is what tolerator falls back to when `/metrics` cannot be read, so a wrong row
 * is a gate flipped against the API server on exactly the clusters that hide `/metrics`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  defaultAtVersion,
  featureGateHistoryCheckedThrough,
  formatVersion,
  parseKubernetesVersion,
} from '../../src/api/feature-gate-history.js';
import { featureGateNames } from '../../src/api/feature-gates.js';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';

const skip = skipWithoutControlPlane();

/** `kubernetes_feature_enabled{name="X",stage="Y"} V` as component-base's metrics write it (GA is stage=""). */
const sampleLine = /^kubernetes_feature_enabled\{name="([^"]+)",stage="([^"]*)"\} ([01])$/;

describe("tolerator's feature-gate table and the API server's /metrics", { skip }, () => {
  let dir = '';
  let plane: ControlPlane | undefined;
  let metrics = new Map<string, { stage: string; enabled: boolean }>();
  let versionInfo: unknown;

  const raw = (path: string): string =>
    execFileSync(plane!.binaries.path('kubectl'), ['--kubeconfig', plane!.kubeconfig, 'get', '--raw', path], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-gate-table-'));
    plane = await startControlPlane({ dir, temporaryDir: true });
    versionInfo = JSON.parse(raw('/version'));
    metrics = new Map();
    for (const line of raw('/metrics').split('\n')) {
      const match = sampleLine.exec(line);
      if (match !== null) metrics.set(match[1]!, { stage: match[2]!, enabled: match[3] === '1' });
    }
  });

  after(async () => {
    await plane?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the version under test is within the table (a newer build needs the table read against its source first)', () => {
    const version = parseKubernetesVersion(versionInfo);
    assert.ok(version !== undefined, JSON.stringify(versionInfo));
    assert.equal(
      defaultAtVersion('PodLevelResources', version).beyondTable,
      false,
      `table checked through ${formatVersion(featureGateHistoryCheckedThrough)}`,
    );
    assert.ok(metrics.size > 100, `the API server reports its gates (${metrics.size} samples)`);
  });

  for (const name of featureGateNames) {
    it(`${name}: the default and stage the table gives for this version`, () => {
      const version = parseKubernetesVersion(versionInfo)!;
      const expected = defaultAtVersion(name, version);
      const reported = metrics.get(name);
      if (expected.stage === 'absent') {
        assert.equal(reported, undefined, `${formatVersion(version)} has no ${name}, the table says`);
        return;
      }
      assert.deepEqual(
        reported,
        { stage: expected.stage === 'GA' ? '' : expected.stage, enabled: expected.enabled },
        `at ${formatVersion(version)}`,
      );
    });
  }
});
