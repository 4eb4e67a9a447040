/**
 * A broken policy file on reload: the last good policies keep serving, and the failure shows in
 * /metrics and in the log (what an operator watching either would see).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { logFormat } from '../../src/http/log-format.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { createMetrics } from '../../src/http/metrics.js';

async function waitFor(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('tenancy policy reload', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-policies-'));
  copyFileSync('policies/dedicated-by-namespace-label.yaml', join(dir, 'label.yaml'));
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  const metrics = createMetrics({ collectProcessMetrics: false });
  const tenancy = startTenancy(dir, pino({ ...logFormat, level: 'info' }, sink), metrics, true);
  after(() => {
    tenancy.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the policies found at start', async () => {
    assert.deepEqual(
      tenancy.current().policies.map((policy) => policy.name),
      ['dedicated-by-namespace-label'],
    );
    assert.match(await metrics.registry.getSingleMetricAsString('tolerator_policies_loaded'), /tolerator_policies_loaded 1/);
  });

  it('keeps the last good set when a new file does not compile, and says so in /metrics and the log', async () => {
    writeFileSync(
      join(dir, 'broken.yaml'),
      [
        'apiVersion: tolerator.dev/v1alpha1',
        'kind: TenancyPolicy',
        'metadata: { name: broken }',
        'spec:',
        '  group: "namespaceObject.metadata.name +"',
        '  taint: { key: x, effect: NoSchedule }',
        '  nodeLabel: x',
        '',
      ].join('\n'),
    );
    await waitFor(
      async () =>
        /tolerator_policy_load_errors_total 1/.test(await metrics.registry.getSingleMetricAsString('tolerator_policy_load_errors_total')),
      'the load error to be counted',
    );
    assert.deepEqual(
      tenancy.current().policies.map((policy) => policy.name),
      ['dedicated-by-namespace-label'],
      'the old set still serves',
    );
    assert.equal(tenancy.healthy(), false);
    const logged = lines.find((line) => line.msg === 'tenancy policies not reloaded; the last good set keeps serving');
    assert.ok(logged !== undefined, 'an error line in the log');
    assert.equal(logged.level, 'error');
    assert.match(JSON.stringify(logged.errors), /broken\.yaml.*TenancyPolicy \\"broken\\": spec\.group: line 1, column \d+/);
  });

  it('takes a fixed file and reports healthy again', async () => {
    copyFileSync('policies/dedicated-by-namespace-prefix.yaml', join(dir, 'broken.yaml'));
    await waitFor(() => tenancy.current().policies.length === 2, 'the fixed set to load');
    assert.equal(tenancy.healthy(), true);
    assert.match(await metrics.registry.getSingleMetricAsString('tolerator_policies_loaded'), /tolerator_policies_loaded 2/);
  });
});

/** The shipped label policy with its kind mistyped: `kind: TenancyPolcy`. */
function mistypedKind(): string {
  const text = readFileSync('policies/dedicated-by-namespace-label.yaml', 'utf8');
  assert.match(text, /^kind: TenancyPolicy$/m);
  return text.replace(/^kind: TenancyPolicy$/m, 'kind: TenancyPolcy');
}

describe('a policy directory that would silently mean nothing: kind: TenancyPolcy', () => {
  it('on reload keeps the last good set, logs the file, document and reason, and counts the failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-policies-'));
    copyFileSync('policies/dedicated-by-namespace-label.yaml', join(dir, 'label.yaml'));
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    const metrics = createMetrics({ collectProcessMetrics: false });
    const tenancy = startTenancy(dir, pino({ ...logFormat, level: 'info' }, sink), metrics, true);
    try {
      writeFileSync(join(dir, 'label.yaml'), mistypedKind());
      await waitFor(
        async () =>
          /tolerator_policy_load_errors_total 1/.test(await metrics.registry.getSingleMetricAsString('tolerator_policy_load_errors_total')),
        'the load error to be counted',
      );
      assert.deepEqual(
        tenancy.current().policies.map((policy) => policy.name),
        ['dedicated-by-namespace-label'],
        'the last good set keeps serving: tenancy is not switched off',
      );
      assert.equal(tenancy.healthy(), false);
      const logged = lines.find((line) => line.msg === 'tenancy policies not reloaded; the last good set keeps serving');
      assert.match(JSON.stringify(logged?.errors), /label\.yaml:\d+: document 1: not a TenancyPolicy: kind \\"TenancyPolcy\\"/);
    } finally {
      tenancy.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('at start, serve does not start: exit 2 naming the file, document and reason', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-policies-'));
    writeFileSync(join(dir, 'label.yaml'), mistypedKind());
    try {
      const result = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'src/main.ts', 'serve', '--port', '0', '--bind-address', '127.0.0.1', '--policies', dir],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      assert.equal(
        result.status,
        2,
        `serve must refuse to start; it exited ${String(result.status)} (${String(result.signal)}): ${result.stdout}`,
      );
      assert.match(result.stderr, /--policies .*: .*label\.yaml:\d+: document 1: not a TenancyPolicy: kind "TenancyPolcy"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const command of [
    ['review', 'examples/review-burstable-pod.json'],
    ['explain', 'examples/tenant-deployment.yaml'],
  ]) {
    it(`${command[0] ?? ''} exits 2 instead of 0 with tenancy off`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'tolerator-policies-'));
      writeFileSync(join(dir, 'label.yaml'), mistypedKind());
      try {
        const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', ...command, '--policies', dir], {
          encoding: 'utf8',
          timeout: 60_000,
        });
        assert.equal(result.status, 2, result.stdout);
        assert.match(result.stderr, /label\.yaml:\d+: document 1: not a TenancyPolicy: kind "TenancyPolcy"/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

describe('tenancy policies that read what tenants write', () => {
  it('serve logs a warning naming the policy and the field, at start', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-policies-'));
    writeFileSync(
      join(dir, 'pod-label.yaml'),
      [
        'apiVersion: tolerator.dev/v1alpha1',
        'kind: TenancyPolicy',
        'metadata: { name: pod-label }',
        'spec:',
        `  group: "namespaceObject.metadata.?labels['dedicated'].orValue('')"`,
        '  taint: { key: dedicated, effect: NoSchedule }',
        '  nodeLabel: dedicated',
        `  exempt: "object.metadata.?labels['exempt'].orValue('') == 'true'"`,
        '',
      ].join('\n'),
    );
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    try {
      const tenancy = startTenancy(dir, pino({ ...logFormat, level: 'info' }, sink), undefined, false);
      assert.deepEqual(
        tenancy.current().policies.map((policy) => policy.name),
        ['pod-label'],
        'the policy still serves',
      );
      const warning = lines.find((line) => line.level === 'warn' && line.policy === 'pod-label');
      assert.ok(warning !== undefined, JSON.stringify(lines));
      assert.match(String(warning.msg), /spec\.exempt reads object\.metadata\.labels, which whoever creates the pod or workload writes/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
