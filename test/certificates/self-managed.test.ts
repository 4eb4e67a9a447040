import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import {
  checkSettings,
  planCertificates,
  renewalTime,
  splitPemBundle,
  withCaBundle,
  type SelfManagedSettings,
  type StoredCertificates,
} from '../../src/certificates/self-managed.js';
import type { ApiRequest } from '../../src/kube/api-requests.js';
import { startSelfManagedCertificates } from '../../src/kube/self-managed-certificates.js';

const day = 86_400_000;
const settings: SelfManagedSettings = {
  dnsNames: ['tolerator.tolerator-system.svc', 'tolerator.tolerator-system.svc.cluster.local'],
  leafValidityMs: 365 * day,
  caValidityMs: 3650 * day,
};
const logger = pino({ level: 'silent' });
const t0 = new Date('2026-12-01T00:00:00Z');

/** An API server holding one Secret and the two webhook configurations, as plain JSON. */
function fakeCluster(options: { secret?: boolean } = {}) {
  const objects = new Map<string, Record<string, unknown>>();
  let version = 1;
  const secretPath = '/api/v1/namespaces/tolerator-system/secrets/tolerator-tls';
  if (options.secret !== false) {
    objects.set(secretPath, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'tolerator-tls', resourceVersion: '1' },
      type: 'Opaque',
    });
  }
  for (const resource of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
    objects.set(`/apis/admissionregistration.k8s.io/v1/${resource}/tolerator`, {
      metadata: { name: 'tolerator', resourceVersion: '1' },
      webhooks: [{ name: 'a.tolerator.dev', clientConfig: { service: { name: 'tolerator' } } }],
    });
  }
  const writes: string[] = [];
  /** Runs before the next PUT of the Secret is applied (another replica's write). */
  let beforeSecretPut: (() => void) | undefined;
  const request: ApiRequest = (method, path, body) => {
    const current = objects.get(path);
    if (method === 'GET') {
      return Promise.resolve(
        current === undefined ? { status: 404, body: { message: 'not found' } } : { status: 200, body: structuredClone(current) },
      );
    }
    if (method === 'PUT') {
      if (path === secretPath && beforeSecretPut !== undefined) {
        const run = beforeSecretPut;
        beforeSecretPut = undefined;
        run();
      }
      const latest = objects.get(path);
      const sent = body as { metadata: { resourceVersion?: string } };
      if (latest === undefined) return Promise.resolve({ status: 404, body: {} });
      if (sent.metadata.resourceVersion !== (latest.metadata as { resourceVersion: string }).resourceVersion) {
        return Promise.resolve({ status: 409, body: { message: 'conflict' } });
      }
      version++;
      objects.set(path, { ...structuredClone(sent), metadata: { ...sent.metadata, resourceVersion: String(version) } });
      writes.push(path);
      return Promise.resolve({ status: 200, body: objects.get(path) });
    }
    return Promise.resolve({ status: 405, body: {} });
  };
  const stored = (): StoredCertificates => {
    const data = (objects.get(secretPath)?.data ?? {}) as Record<string, string>;
    const text = (key: string): string | undefined =>
      data[key] === undefined ? undefined : Buffer.from(data[key], 'base64').toString('utf8');
    return { caCert: text('ca.crt'), caKey: text('ca.key'), tlsCert: text('tls.crt'), tlsKey: text('tls.key') };
  };
  const caBundles = (): (string | undefined)[] =>
    ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'].map(
      (resource) =>
        (
          objects.get(`/apis/admissionregistration.k8s.io/v1/${resource}/tolerator`) as {
            webhooks: { clientConfig: { caBundle?: string } }[];
          }
        ).webhooks[0]?.clientConfig.caBundle,
    );
  return {
    request,
    stored,
    caBundles,
    writes,
    setStored(next: StoredCertificates) {
      const secret = objects.get(secretPath)!;
      const encode = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value).toString('base64'));
      version++;
      objects.set(secretPath, {
        ...secret,
        metadata: { ...(secret.metadata as object), resourceVersion: String(version) },
        data: {
          'ca.crt': encode(next.caCert),
          'ca.key': encode(next.caKey),
          'tls.crt': encode(next.tlsCert),
          'tls.key': encode(next.tlsKey),
        },
      });
    },
    onNextSecretPut(run: () => void) {
      beforeSecretPut = run;
    },
  };
}

async function issueAt(now: Date, cluster = fakeCluster()) {
  const controller = await startSelfManagedCertificates({
    request: cluster.request,
    namespace: 'tolerator-system',
    secretName: 'tolerator-tls',
    mutatingWebhook: 'tolerator',
    validatingWebhook: 'tolerator',
    settings,
    now: () => now,
    logger,
  });
  controller.stop();
  return { cluster, controller };
}

describe('self-managed certificates', () => {
  it('fills an empty Secret with a CA and a leaf it signs for the Service names, and writes the CA into both webhooks', async () => {
    const { cluster, controller } = await issueAt(t0);
    const stored = cluster.stored();
    const ca = new X509Certificate(stored.caCert!);
    const leaf = new X509Certificate(stored.tlsCert!);
    assert.equal(ca.ca, true);
    assert.equal(leaf.ca, false);
    assert.ok(leaf.verify(ca.publicKey), 'the leaf is signed by the CA');
    assert.equal(leaf.subjectAltName, 'DNS:tolerator.tolerator-system.svc, DNS:tolerator.tolerator-system.svc.cluster.local');
    assert.equal(new Date(leaf.validTo).getTime(), t0.getTime() + settings.leafValidityMs);
    assert.equal(new Date(leaf.validFrom).getTime(), t0.getTime() - 3_600_000, 'backdated an hour, as cert-controller');
    assert.equal(new Date(ca.validTo).getTime(), t0.getTime() + settings.caValidityMs);
    assert.deepEqual(controller.current(), { cert: stored.tlsCert, key: stored.tlsKey });
    const expected = Buffer.from(stored.caCert!).toString('base64');
    assert.deepEqual(cluster.caBundles(), [expected, expected]);
  });

  it('keeps a valid Secret as it is and names the renewal at three quarters of the leaf lifetime', async () => {
    const { cluster } = await issueAt(t0);
    const writes = cluster.writes.length;
    const plan = planCertificates(cluster.stored(), settings, new Date(t0.getTime() + 200 * day));
    assert.equal(plan.action, 'keep');
    assert.equal(plan.renewAt.getTime(), t0.getTime() + settings.leafValidityMs * 0.75);
    await issueAt(new Date(t0.getTime() + day), cluster);
    assert.equal(cluster.writes.length, writes, 'nothing written when nothing is due');
  });

  it('renews the leaf with the same CA at its renewal time, and the webhooks keep their caBundle', async () => {
    const { cluster } = await issueAt(t0);
    const before = cluster.stored();
    const bundles = cluster.caBundles();
    const renewAt = renewalTime(
      new X509Certificate(before.tlsCert!).validTo ? new Date(new X509Certificate(before.tlsCert!).validTo) : t0,
      settings.leafValidityMs,
    );
    assert.equal(planCertificates(before, settings, new Date(renewAt.getTime() - 1_000)).action, 'keep');
    assert.equal(planCertificates(before, settings, renewAt).action, 'issue-leaf');
    await issueAt(renewAt, cluster);
    const after = cluster.stored();
    assert.notEqual(after.tlsCert, before.tlsCert);
    assert.equal(after.caCert, before.caCert);
    assert.equal(after.caKey, before.caKey);
    assert.deepEqual(cluster.caBundles(), bundles);
  });

  it('replaces a CA due for renewal, keeps the old one in the bundle while it is valid, and drops it once expired', async () => {
    const { cluster } = await issueAt(t0);
    const oldCa = cluster.stored().caCert!;
    const caRenewal = new Date(t0.getTime() + settings.caValidityMs * 0.75);
    const plan = planCertificates(cluster.stored(), settings, caRenewal);
    assert.equal(plan.action, 'issue-ca');
    await issueAt(caRenewal, cluster);
    const bundle = splitPemBundle(cluster.stored().caCert!);
    assert.equal(bundle.length, 2);
    assert.equal(bundle[1]?.trim(), oldCa.trim());
    const leaf = new X509Certificate(cluster.stored().tlsCert!);
    assert.ok(leaf.verify(new X509Certificate(bundle[0]!).publicKey), 'the new leaf is signed by the new CA');
    const afterOldExpiry = new Date(t0.getTime() + settings.caValidityMs + day);
    await issueAt(afterOldExpiry, cluster);
    assert.deepEqual(
      cluster.caBundles(),
      [Buffer.from(bundle[0]!).toString('base64'), Buffer.from(bundle[0]!).toString('base64')],
      'the webhooks carry only the CA that has not expired',
    );
    const kept = planCertificates(cluster.stored(), settings, afterOldExpiry);
    assert.equal(kept.action, 'keep');
    assert.equal(splitPemBundle(kept.caBundle).length, 1);
  });

  it('reissues the leaf when it names other hosts, its key does not match, or another CA signed it', async () => {
    const { cluster } = await issueAt(t0);
    const stored = cluster.stored();
    const other = (await issueAt(t0)).cluster.stored();
    const now = new Date(t0.getTime() + day);
    const renamed = planCertificates(stored, { ...settings, dnsNames: ['tolerator.elsewhere.svc'] }, now);
    assert.equal(renamed.action, 'issue-leaf');
    assert.match(renamed.reason, /does not name tolerator\.elsewhere\.svc/);
    const wrongKey = planCertificates({ ...stored, tlsKey: other.tlsKey }, settings, now);
    assert.match(wrongKey.action === 'issue-leaf' ? wrongKey.reason : '', /tls\.key does not belong/);
    const foreign = planCertificates({ ...stored, tlsCert: other.tlsCert, tlsKey: other.tlsKey }, settings, now);
    assert.match(foreign.action === 'issue-leaf' ? foreign.reason : '', /not signed by the current CA/);
    const garbage = planCertificates({ ...stored, caCert: 'not a certificate' }, settings, now);
    assert.equal(garbage.action, 'issue-ca');
    const wrongCaKey = planCertificates({ ...stored, caKey: other.caKey }, settings, now);
    assert.match(wrongCaKey.action === 'issue-ca' ? wrongCaKey.reason : '', /ca\.key does not belong/);
  });

  it('serves what another replica wrote first when its own write conflicts', async () => {
    const cluster = fakeCluster();
    const winner = (await issueAt(t0)).cluster.stored();
    cluster.onNextSecretPut(() => {
      cluster.setStored(winner);
    });
    const { controller } = await issueAt(t0, cluster);
    assert.equal(controller.current().cert, winner.tlsCert);
    assert.equal(cluster.stored().tlsCert, winner.tlsCert);
    assert.deepEqual(cluster.caBundles(), [Buffer.from(winner.caCert!).toString('base64'), Buffer.from(winner.caCert!).toString('base64')]);
  });

  it('fails at start, naming the Secret, when it does not exist', async () => {
    await assert.rejects(issueAt(t0, fakeCluster({ secret: false })), /Secret tolerator-system\/tolerator-tls not found/);
  });

  it('refuses lifetimes under which a leaf could outlive its CA renewal', () => {
    assert.throws(() => {
      checkSettings({ ...settings, caValidityMs: settings.leafValidityMs });
    }, /at least twice/);
    assert.throws(() => {
      checkSettings({ ...settings, leafValidityMs: 1_000, caValidityMs: 10_000 });
    }, /at least 1m/);
    assert.throws(() => {
      checkSettings({ ...settings, dnsNames: [] });
    }, /DNS name/);
  });

  it('writes a webhook configuration only when a caBundle differs', () => {
    const pem = 'PEM';
    const encoded = Buffer.from(pem).toString('base64');
    const configuration = {
      metadata: { name: 'x' },
      webhooks: [
        { name: 'a', clientConfig: { caBundle: encoded } },
        { name: 'b', clientConfig: {} },
      ],
    };
    const next = withCaBundle(configuration, pem);
    assert.deepEqual(
      next?.webhooks.map((webhook) => webhook.clientConfig.caBundle),
      [encoded, encoded],
    );
    assert.equal(withCaBundle(next, pem), undefined);
  });

  it('refuses a ca.crt over its bound before parsing it', () => {
    assert.throws(() => splitPemBundle('x'.repeat(64 * 1024 + 1)), /over 65536 bytes/);
    const plan = planCertificates({ caCert: 'x'.repeat(64 * 1024 + 1) }, settings, t0);
    assert.equal(plan.action, 'issue-ca');
  });
});
