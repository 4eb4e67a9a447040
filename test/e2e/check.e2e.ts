/**
 * `tolerator check` against a real API server with the shipped webhooks (test/cluster/
 * tolerator-on-cluster.ts): every check passes on the correct install, and each broken part is
 * named — a Service without endpoints, a wrong caBundle, an expired serving certificate, a
 * missing webhook configuration. Each case breaks one thing, runs the command as a user runs it
 * (`tolerator check --kubeconfig FILE -o json`), and puts the install back.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CheckResult } from '../../src/audit/install-check.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createCertificateAuthority, signCertificate } from '../cluster/pki.js';
import { pollUntil } from '../cluster/poll.js';
import {
  asKubernetesObject,
  plain,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const policyFile = 'dedicated-by-namespace-prefix.yaml';

interface CheckRun {
  readonly status: number | null;
  readonly checks: readonly CheckResult[];
  readonly output: string;
}

describe('tolerator check', { skip }, () => {
  let dir = '';
  let cluster: ToleratorOnCluster | undefined;
  let kubeconfig = '';

  const run = (...args: string[]): CheckRun => {
    const result = spawnSync(
      process.execPath,
      [
        '--enable-experimental-regexp-engine-on-excessive-backtracks',
        '--import',
        'tsx',
        'src/main.ts',
        'check',
        '--kubeconfig',
        kubeconfig,
        ...args,
      ],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, KUBECONFIG: '' } },
    );
    const output = `${result.stdout}${result.stderr}`;
    let checks: CheckResult[] = [];
    try {
      checks = (JSON.parse(result.stdout) as { checks: CheckResult[] }).checks;
    } catch {
      // text output, or none: the assertions below print it
    }
    return { status: result.status, checks, output };
  };
  const failed = (checks: readonly CheckResult[]): string[] => checks.filter((check) => !check.ok).map((check) => check.id);
  const byId = (checks: readonly CheckResult[], id: string): CheckResult | undefined => checks.find((check) => check.id === id);

  const webhookRef = (kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration') => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: { name: 'tolerator' },
  });
  const read = async (kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration'): Promise<Manifest> =>
    plain(await cluster!.objects.read(webhookRef(kind))) as Manifest;
  const replace = async (object: Manifest): Promise<void> => {
    await cluster!.objects.replace(asKubernetesObject(object));
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-check-'));
    const policies = join(dir, 'policies');
    mkdirSync(policies);
    const policy = readFileSync(join(REPO_ROOT, 'policies', policyFile), 'utf8');
    writeFileSync(join(policies, policyFile), policy);
    cluster = await startToleratorOnCluster({ dir, serveArgs: ['--policies', policies] });
    kubeconfig = cluster.plane.kubeconfig;
    // What deploy/ mounts as --policies: the same file, as the ConfigMap holds it.
    await cluster.objects.create(
      asKubernetesObject({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'tolerator-policies', namespace: 'tolerator-system' },
        data: { [policyFile]: policy },
      }),
    );
  });

  after(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes every check on the correct install, exit 0, one ✓ line per check', () => {
    const json = run('-o', 'json');
    assert.equal(json.status, 0, json.output);
    assert.deepEqual(failed(json.checks), [], json.output);
    for (const id of [
      'mutating-webhook-configuration',
      'validating-webhook-configuration',
      'defaults',
      'excluded-namespace',
      'tenancy',
      'feature-gates',
      'policies',
      'runtimeclass-pattern',
    ]) {
      assert.ok(byId(json.checks, id)?.ok === true && byId(json.checks, id)?.skipped !== true, `${id}: ${json.output}`);
    }
    assert.match(
      byId(json.checks, 'mutating-serving-certificate')?.message ?? '',
      /verifies the serving certificate for 127\.0\.0\.1; it expires in \d+ days/,
    );
    assert.match(byId(json.checks, 'policies')?.message ?? '', /serves the 1 policy of ConfigMap tolerator-system\/tolerator-policies/);
    const text = run();
    assert.equal(text.status, 0, text.output);
    const lines = text.output.trimEnd().split('\n');
    assert.equal(lines.length, json.checks.length, text.output);
    // Every check passes; the one on Karpenter NodePools is skipped (-) where Karpenter is not installed.
    assert.ok(
      lines.every((line) => line.startsWith('✓ ') || line.startsWith('- the API server does not serve karpenter.sh/v1 NodePools')),
      text.output,
    );
  });

  it('names a webhook whose Service has no ready endpoints', async () => {
    const original = await read('MutatingWebhookConfiguration');
    await cluster!.objects.create(
      asKubernetesObject({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'tolerator', namespace: 'tolerator-system' },
        spec: { ports: [{ port: 443, targetPort: 8443 }], selector: { 'app.kubernetes.io/name': 'tolerator' } },
      }),
    );
    const broken = structuredClone(original) as Manifest & { webhooks: { clientConfig: Record<string, unknown> }[] };
    for (const webhook of broken.webhooks) {
      webhook.clientConfig = {
        service: { namespace: 'tolerator-system', name: 'tolerator', port: 443, path: '/mutate' },
        caBundle: webhook.clientConfig.caBundle,
      };
    }
    await replace(broken);
    try {
      const result = run('-o', 'json');
      assert.equal(result.status, 1, result.output);
      const endpoints = byId(result.checks, 'mutating-endpoints');
      assert.equal(endpoints?.ok, false, result.output);
      assert.match(endpoints.message, /mutate\.tolerator\.dev: Service tolerator-system\/tolerator has no ready endpoints/);
      assert.match(endpoints.hint ?? '', /get pods,endpointslices/);
      assert.equal(byId(result.checks, 'validating-endpoints')?.ok, true, result.output);
    } finally {
      await replace({ ...(await read('MutatingWebhookConfiguration')), webhooks: original.webhooks });
    }
  });

  it('names a caBundle that does not verify the serving certificate', async () => {
    const original = await read('ValidatingWebhookConfiguration');
    const otherCa = await createCertificateAuthority('not-the-serving-ca');
    const broken = structuredClone(original) as Manifest & { webhooks: { clientConfig: Record<string, unknown> }[] };
    for (const webhook of broken.webhooks) webhook.clientConfig.caBundle = Buffer.from(otherCa.cert).toString('base64');
    await replace(broken);
    try {
      const result = run('-o', 'json');
      assert.equal(result.status, 1, result.output);
      const certificate = byId(result.checks, 'validating-serving-certificate');
      assert.equal(certificate?.ok, false, result.output);
      assert.match(certificate.message, /validate\.tolerator\.dev: its caBundle does not verify the serving certificate/);
      assert.equal(byId(result.checks, 'mutating-serving-certificate')?.ok, true, result.output);
    } finally {
      await replace({ ...(await read('ValidatingWebhookConfiguration')), webhooks: original.webhooks });
    }
  });

  it('names an expired serving certificate', async () => {
    const serving = cluster!.serving;
    const good = { cert: readFileSync(serving.cert, 'utf8'), key: readFileSync(serving.key, 'utf8') };
    const day = 86_400_000;
    const expired = await signCertificate(serving.ca, {
      commonName: 'tolerator',
      ips: ['127.0.0.1'],
      dnsNames: ['localhost'],
      usage: 'server',
      validity: { notBeforeDate: new Date(Date.now() - 10 * day), notAfterDate: new Date(Date.now() - day) },
    });
    writeFileSync(serving.key, expired.key, { mode: 0o600 });
    writeFileSync(serving.cert, expired.cert);
    try {
      // tolerator reloads the pair when the files change (src/http/tls-server.ts).
      const result = await pollUntil(
        'tolerator serving the expired certificate',
        () => {
          const attempt = run('-o', 'json');
          return byId(attempt.checks, 'mutating-serving-certificate')?.ok === false ? attempt : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );
      assert.equal(result.status, 1, result.output);
      assert.match(byId(result.checks, 'mutating-serving-certificate')?.message ?? '', /the serving certificate expired at /);
      assert.match(byId(result.checks, 'validating-serving-certificate')?.message ?? '', /the serving certificate expired at /);
    } finally {
      writeFileSync(serving.key, good.key, { mode: 0o600 });
      writeFileSync(serving.cert, good.cert);
      await pollUntil('tolerator serving the good certificate again', () => (run('-o', 'json').status === 0 ? true : undefined), {
        timeoutMs: 60_000,
        intervalMs: 1_000,
      });
    }
  });

  it('names a missing webhook configuration', async () => {
    await cluster!.objects.delete(webhookRef('ValidatingWebhookConfiguration'));
    const result = run('-o', 'json');
    assert.equal(result.status, 1, result.output);
    const configuration = byId(result.checks, 'validating-webhook-configuration');
    assert.equal(configuration?.ok, false, result.output);
    assert.equal(configuration.message, 'ValidatingWebhookConfiguration tolerator not found');
    assert.equal(byId(result.checks, 'mutating-webhook-configuration')?.ok, true, result.output);
    const text = run();
    assert.match(text.output, /^✗ ValidatingWebhookConfiguration tolerator not found\n {4}hint: install it/m);
  });

  it('answers a usage error with exit 2', () => {
    assert.equal(run('--output', 'yaml').status, 2);
    assert.equal(run('--context', 'no-such-context').status, 2);
  });
});
