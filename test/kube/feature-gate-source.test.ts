/**
 * The gate source serve decides with: what it holds after each read of the cluster, what it logs
 * (each change; a disagreeing flag once per change of the cluster's answer), what it does when the
 * cluster cannot be read (keeps the last known value, retries sooner), and the series of
 * tolerator_feature_gate_enabled it feeds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FeatureGateName } from '../../src/api/feature-gates.js';
import { createMetrics } from '../../src/http/metrics.js';
import type { ClusterGateReport } from '../../src/kube/cluster-feature-gates.js';
import { startFeatureGateSource, type FeatureGateSourceOptions } from '../../src/kube/feature-gate-source.js';

interface LogLine {
  level: 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  msg: string;
}

function recorder(): { lines: LogLine[]; logger: FeatureGateSourceOptions['logger'] } {
  const lines: LogLine[] = [];
  const log =
    (level: LogLine['level']) =>
    (fields: object, msg: string): void => {
      lines.push({ level, fields: fields as Record<string, unknown>, msg });
    };
  return { lines, logger: { info: log('info'), warn: log('warn'), error: log('error') } };
}

function report(
  metrics: Partial<Record<FeatureGateName, boolean>> | undefined,
  minor: number | undefined,
  problems: Partial<Pick<ClusterGateReport, 'metricsProblem' | 'versionProblem'>> = {},
): ClusterGateReport {
  return {
    metrics: metrics === undefined ? undefined : new Map(Object.entries(metrics) as [FeatureGateName, boolean][]),
    version: minor === undefined ? undefined : { major: 1, minor },
    stages: new Map(),
    ...(minor === undefined ? {} : { gitVersion: `v1.${minor}.0` }),
    ...problems,
  };
}

/** A read function that answers the queued reports in order (the last one again once they run out). */
function scripted(...reports: ClusterGateReport[]): { read: () => Promise<ClusterGateReport>; count: () => number } {
  let calls = 0;
  return {
    read: () => Promise.resolve(reports[Math.min(calls++, reports.length - 1)] as ClusterGateReport),
    count: () => calls,
  };
}

const quiet = { refreshIntervalMs: 0 } as const;

describe('the feature gate source', () => {
  it('without a cluster: settled at once, the flag and the built-in defaults, said so in the detail', () => {
    const { logger } = recorder();
    const source = startFeatureGateSource({ explicit: { PodLevelResources: false }, read: undefined, logger, ...quiet });
    assert.equal(source.settled(), true);
    assert.deepEqual(source.current(), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: false,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
    assert.deepEqual(source.detail(), [
      'feature gate TaintTolerationComparisonOperators=false source=default',
      'feature gate PodLevelResources=false source=flag',
      'feature gate PodLevelResourcesFixKubeletQOSClass=false source=default',
      'feature gate DRADeviceTaints=false source=default',
      'feature gate DRADeviceTaintRules=false source=default',
      'feature gates: no cluster; --feature-gates and the built-in defaults apply',
    ]);
  });

  it('takes the cluster /metrics answer after the first read, and is not settled before it', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(report({ TaintTolerationComparisonOperators: true, PodLevelResources: true }, 35));
    const source = startFeatureGateSource({
      explicit: {},
      read: cluster.read,
      logger,
      ...quiet,
      now: () => new Date('2026-11-30T12:00:00Z'),
    });
    assert.equal(source.settled(), false);
    assert.equal(source.current().TaintTolerationComparisonOperators, false, 'the built-in default until the cluster answers');

    await source.refresh();

    assert.equal(source.settled(), true);
    assert.equal(source.current().TaintTolerationComparisonOperators, true);
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'cluster-metrics');
    const change = lines.find((line) => line.msg === 'feature gate TaintTolerationComparisonOperators=true from cluster-metrics');
    assert.ok(change !== undefined, 'the change is logged');
    assert.deepEqual(change.fields.previous, { enabled: false, source: 'default' });
    assert.deepEqual(source.detail(), [
      'feature gate TaintTolerationComparisonOperators=true source=cluster-metrics',
      'feature gate PodLevelResources=true source=cluster-metrics',
      'feature gate PodLevelResourcesFixKubeletQOSClass=false source=cluster-version (v1.35: not in that version)',
      'feature gate DRADeviceTaints=false source=cluster-version (v1.35: alpha default)',
      'feature gate DRADeviceTaintRules=false source=cluster-version (v1.35: alpha default)',
      'feature gates: cluster last read at 2026-11-30T12:00:00.000Z; /metrics: ok; /version: ok (v1.35.0)',
    ]);
    source.stop();
  });

  it("reports the server's version from /version, keeps it when a later read gets none, and takes an upgrade's", async () => {
    const { logger } = recorder();
    const cluster = scripted(report({}, 36), report(undefined, undefined, { versionProblem: 'GET /version: HTTP 503' }), report({}, 37));
    const source = startFeatureGateSource({ explicit: {}, read: cluster.read, logger, ...quiet });
    assert.equal(source.serverVersion(), undefined, 'nothing read yet');
    await source.refresh();
    assert.deepEqual(source.serverVersion(), { major: 1, minor: 36 });
    await source.refresh();
    assert.deepEqual(source.serverVersion(), { major: 1, minor: 36 }, 'a failed read is not a new version');
    await source.refresh();
    assert.deepEqual(source.serverVersion(), { major: 1, minor: 37 });
    source.stop();
  });

  it('follows a gate that flips between two reads, logging the change once', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(
      report({ TaintTolerationComparisonOperators: false }, 35),
      report({ TaintTolerationComparisonOperators: true }, 35),
      report({ TaintTolerationComparisonOperators: true }, 35),
    );
    const source = startFeatureGateSource({ explicit: {}, read: cluster.read, logger, ...quiet });
    await source.refresh();
    assert.equal(source.current().TaintTolerationComparisonOperators, false);
    await source.refresh();
    assert.equal(source.current().TaintTolerationComparisonOperators, true);
    await source.refresh();
    assert.equal(
      lines.filter((line) => line.msg === 'feature gate TaintTolerationComparisonOperators=true from cluster-metrics').length,
      1,
      'an unchanged gate is not logged again',
    );
    source.stop();
  });

  it('keeps an explicit flag, warning once per change of what the cluster says, not on every read', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(
      report({ TaintTolerationComparisonOperators: true }, 35),
      report({ TaintTolerationComparisonOperators: true }, 35),
      report({ TaintTolerationComparisonOperators: false }, 35),
      report({ TaintTolerationComparisonOperators: true }, 35),
    );
    const source = startFeatureGateSource({
      explicit: { TaintTolerationComparisonOperators: false },
      read: cluster.read,
      logger,
      ...quiet,
    });
    const warnings = (): LogLine[] =>
      lines.filter((line) => line.level === 'warn' && line.fields.gate === 'TaintTolerationComparisonOperators');

    await source.refresh();
    assert.equal(source.current().TaintTolerationComparisonOperators, false);
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'flag');
    assert.equal(warnings().length, 1);
    assert.equal(
      warnings()[0]?.msg,
      '--feature-gates sets TaintTolerationComparisonOperators=false but the cluster has it on (cluster-metrics); ' +
        'tolerator follows the flag, and so may allow what the API server refuses or refuse what it allows',
    );
    await source.refresh(); // the same answer: no new warning
    assert.equal(warnings().length, 1);
    await source.refresh(); // the cluster now agrees: nothing to warn about
    assert.equal(warnings().length, 1);
    await source.refresh(); // and disagrees again
    assert.equal(warnings().length, 2);
    assert.equal(source.current().TaintTolerationComparisonOperators, false, 'the flag held throughout');
    source.stop();
  });

  it('does not warn about an agreeing flag when one read of /metrics fails at the version it answered at', async () => {
    // 1.35: the gate is alpha and off by default, on in this API server by its flags, as in ours.
    const { lines, logger } = recorder();
    const cluster = scripted(
      report({ TaintTolerationComparisonOperators: true }, 35),
      report(undefined, 35, { metricsProblem: 'GET /metrics: HTTP 503' }),
      report({ TaintTolerationComparisonOperators: true }, 35),
    );
    const source = startFeatureGateSource({
      explicit: { TaintTolerationComparisonOperators: true },
      read: cluster.read,
      logger,
      ...quiet,
    });
    for (let read = 0; read < 3; read++) await source.refresh();
    assert.deepEqual(
      lines.filter((line) => line.level === 'warn' && line.fields.gate === 'TaintTolerationComparisonOperators'),
      [],
    );
    source.stop();
  });

  it('warns about a flag that disagrees with the version default when /metrics cannot be read, naming the version', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(report(undefined, 33, { metricsProblem: 'GET /metrics: HTTP 403' }));
    const source = startFeatureGateSource({ explicit: { PodLevelResources: true }, read: cluster.read, logger, ...quiet });
    await source.refresh();
    const warning = lines.find((line) => line.level === 'warn' && line.fields.gate === 'PodLevelResources');
    assert.match(
      warning?.msg ?? '',
      /sets PodLevelResources=true but the cluster has it off \(cluster-version \(v1\.33: alpha default\)\)/,
    );
    source.stop();
  });

  it('falls back to the version default when /metrics is unreadable, and says why in the log and the detail', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(report(undefined, 31, { metricsProblem: 'GET /metrics: HTTP 403' }));
    const source = startFeatureGateSource({ explicit: {}, read: cluster.read, logger, ...quiet });
    await source.refresh();
    assert.deepEqual(source.current(), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: false,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
    assert.equal(source.resolved().PodLevelResources.source, 'cluster-version');
    assert.ok(lines.some((line) => line.level === 'warn' && line.fields.problems === 'GET /metrics: HTTP 403'));
    assert.equal(source.detail()[1], 'feature gate PodLevelResources=false source=cluster-version (v1.31: not in that version)');
    assert.match(source.detail()[5] ?? '', /\/metrics: GET \/metrics: HTTP 403; \/version: ok \(v1\.31\.0\)$/);
    source.stop();
  });

  it('says in the log when the version is newer than its table, and assumes the newest entry', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(report(undefined, 41, { metricsProblem: 'GET /metrics: HTTP 403' }));
    const source = startFeatureGateSource({ explicit: {}, read: cluster.read, logger, ...quiet });
    await source.refresh();
    assert.equal(source.current().PodLevelResources, true);
    const line = lines.find((entry) => entry.fields.gate === 'PodLevelResources' && entry.fields.source === 'cluster-version');
    assert.equal(
      line?.msg,
      "feature gate PodLevelResources=true from cluster-version (v1.41 is newer than tolerator's table of gate defaults; assuming the newest entry still holds)",
    );
    assert.equal(line.fields.beyondTable, true);
    source.stop();
  });

  it('keeps the last known values when the cluster cannot be read at all, and retries sooner than the interval', async () => {
    const { lines, logger } = recorder();
    const cluster = scripted(
      report({ TaintTolerationComparisonOperators: true }, 35),
      report(undefined, undefined, { metricsProblem: 'down', versionProblem: 'down' }),
    );
    const source = startFeatureGateSource({ explicit: {}, read: cluster.read, logger, refreshIntervalMs: 60_000, retryIntervalMs: 20 });
    await source.refresh();
    assert.equal(source.current().TaintTolerationComparisonOperators, true);
    await source.refresh(); // the cluster is gone
    assert.equal(source.current().TaintTolerationComparisonOperators, true, 'the last known value');
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'cluster-metrics');
    const readsBefore = cluster.count();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(cluster.count() > readsBefore, 'retried on the short interval, not after 60 s');
    assert.equal(
      lines.filter((line) => line.level === 'warn' && line.fields.problems === 'down; down').length,
      1,
      'the same problems are logged once',
    );
    source.stop();
  });

  it('settles with the built-in defaults when the first read never answers, within the deadline', async () => {
    const { logger } = recorder();
    const source = startFeatureGateSource({
      explicit: {},
      read: () => new Promise<ClusterGateReport>(() => undefined),
      logger,
      refreshIntervalMs: 0,
      readDeadlineMs: 50,
    });
    await source.refresh();
    assert.equal(source.settled(), true);
    assert.deepEqual(source.current(), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: true,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'default');
    assert.match(source.detail()[5] ?? '', /\/metrics: no answer within 50 ms/);
    source.stop();
  });

  it('shares one read between concurrent refreshes, and reads no more after stop', async () => {
    const { logger } = recorder();
    const cluster = scripted(report({}, 35));
    const source = startFeatureGateSource({ explicit: {}, read: cluster.read, logger, ...quiet });
    await Promise.all([source.refresh(), source.refresh(), source.refresh()]);
    assert.equal(cluster.count(), 1);
    source.stop();
    await source.refresh();
    assert.equal(cluster.count(), 1);
  });
});

describe('tolerator_feature_gate_enabled', () => {
  it('has one series per gate, labelled with the current source only', async () => {
    const { logger } = recorder();
    const cluster = scripted(
      report(undefined, undefined, { metricsProblem: 'down', versionProblem: 'down' }),
      report({ TaintTolerationComparisonOperators: true }, 35),
      // After an upgrade: what /metrics said at 1.35 no longer holds, and the 1.36 default does.
      report(undefined, 36, { metricsProblem: 'GET /metrics: HTTP 403' }),
    );
    const source = startFeatureGateSource({ explicit: { PodLevelResources: false }, read: cluster.read, logger, ...quiet });
    const metrics = createMetrics({ collectProcessMetrics: false, featureGateState: () => source.resolved() });
    const series = async (): Promise<string[]> =>
      (await metrics.registry.metrics()).split('\n').filter((line) => line.startsWith('tolerator_feature_gate_enabled{'));

    await source.refresh(); // the cluster could not be read: the built-in default and the flag
    assert.deepEqual(await series(), [
      'tolerator_feature_gate_enabled{name="TaintTolerationComparisonOperators",source="default"} 0',
      'tolerator_feature_gate_enabled{name="PodLevelResources",source="flag"} 0',
      'tolerator_feature_gate_enabled{name="PodLevelResourcesFixKubeletQOSClass",source="default"} 0',
      'tolerator_feature_gate_enabled{name="DRADeviceTaints",source="default"} 0',
      'tolerator_feature_gate_enabled{name="DRADeviceTaintRules",source="default"} 0',
    ]);
    await source.refresh();
    assert.deepEqual(await series(), [
      'tolerator_feature_gate_enabled{name="TaintTolerationComparisonOperators",source="cluster-metrics"} 1',
      'tolerator_feature_gate_enabled{name="PodLevelResources",source="flag"} 0',
      'tolerator_feature_gate_enabled{name="PodLevelResourcesFixKubeletQOSClass",source="cluster-version"} 0',
      'tolerator_feature_gate_enabled{name="DRADeviceTaints",source="cluster-version"} 0',
      'tolerator_feature_gate_enabled{name="DRADeviceTaintRules",source="cluster-version"} 0',
    ]);
    await source.refresh();
    assert.deepEqual(await series(), [
      'tolerator_feature_gate_enabled{name="TaintTolerationComparisonOperators",source="cluster-version"} 0',
      'tolerator_feature_gate_enabled{name="PodLevelResources",source="flag"} 0',
      'tolerator_feature_gate_enabled{name="PodLevelResourcesFixKubeletQOSClass",source="cluster-version"} 0',
      // 1.36: DRADeviceTaints beta and on by default, DRADeviceTaintRules beta and off.
      'tolerator_feature_gate_enabled{name="DRADeviceTaints",source="cluster-version"} 1',
      'tolerator_feature_gate_enabled{name="DRADeviceTaintRules",source="cluster-version"} 0',
    ]);
    source.stop();
  });
});
