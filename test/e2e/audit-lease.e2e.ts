/**
 * The periodic audit on one replica of three, against a real kube-apiserver: three `tolerator
 * serve --audit-interval` processes with tolerator's own identity and the RBAC of
 * deploy/overlays/audit elect one holder of the coordination.k8s.io Lease
 * tolerator-system/tolerator-audit; only that one audits (its log, its tolerator_audit_leader
 * gauge); when it stops it gives the Lease up, and one of the other two takes the audit over.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';
import {
  asKubernetesObject,
  plain,
  startToleratorOnCluster,
  stopChild,
  TOLERATOR_GROUPS,
  TOLERATOR_USER,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { renderKustomize } from '../support/rendered-manifests.js';
import { startServe, type ServedProcess } from '../support/serve-process.js';

const skip = skipWithoutControlPlane();

/** 3 s: the first run 3 s after a replica takes the Lease (the interval, being under a minute), then 3 s after each run. */
const auditArgs = ['--audit-interval', '3s'];

function metricsOf(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/metrics', ca, timeout: 5_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
    req.on('timeout', () => req.destroy(new Error('/metrics timed out')));
    req.on('error', reject);
    req.end();
  });
}

interface Replica {
  readonly served: ServedProcess;
  readonly identity: string;
}

const identityOf = (served: ServedProcess): string => {
  const line = served.logs.find((entry) => entry.msg === 'periodic audit on, on the replica holding the audit lease');
  assert.ok(line !== undefined && typeof line.identity === 'string', 'the replica logs its lease identity');
  return line.identity;
};
const audits = (served: ServedProcess): number => served.logs.filter((entry) => entry.msg === 'audit completed').length;

describe('the periodic audit of three replicas against kube-apiserver', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;
  let replicas: Replica[];
  const extra: ServedProcess[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-lease-'));
    cluster = await startToleratorOnCluster({ dir, serveArgs: auditArgs });
    const { objects } = cluster;
    for (const object of renderKustomize(join(REPO_ROOT, 'deploy', 'overlays', 'audit'))) {
      if (/^(Cluster)?Role(Binding)?$/.test(object.kind) && object.metadata.name.startsWith('tolerator-audit')) {
        await objects.create(asKubernetesObject(object as Manifest));
      }
    }
    const kubeconfig = await cluster.plane.kubeconfigFor(TOLERATOR_USER, TOLERATOR_GROUPS);
    for (let i = 0; i < 2; i++) {
      const served = await startServe([
        '--kubeconfig',
        kubeconfig,
        '--tls-cert-file',
        cluster.serving.cert,
        '--tls-private-key-file',
        cluster.serving.key,
        '--shutdown-delay',
        '0',
        '--shutdown-grace',
        '5',
        ...auditArgs,
      ]);
      cluster.plane.adopt(served.child);
      extra.push(served);
    }
    const first = cluster.tolerator();
    assert.ok(first !== undefined);
    replicas = [first, ...extra].map((served) => ({ served, identity: identityOf(served) }));
  });
  after(async () => {
    for (const served of extra) await stopChild(served.child, 'SIGKILL');
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const lease = async (): Promise<{ holderIdentity?: string; leaseTransitions?: number; leaseDurationSeconds?: number }> =>
    (
      plain(
        await cluster.objects.read({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: 'tolerator-audit', namespace: 'tolerator-system' },
        }),
      ) as { spec: { holderIdentity?: string } }
    ).spec;

  it('one replica holds the Lease and audits; the other two do not', async (t) => {
    const holder = await pollUntil(
      'the Lease held by a replica',
      async () => {
        const spec = await lease();
        return replicas.find((replica) => replica.identity === spec.holderIdentity);
      },
      { timeoutMs: 60_000, retryOnError: true },
    );
    assert.equal((await lease()).leaseDurationSeconds, 15);
    // Three more audits by the holder, all three replicas running: nine seconds or more, in which
    // the others, retrying every 2 to 4.4 s, have tried for the Lease several times each.
    const already = audits(holder.served);
    await pollUntil('three audits', () => Promise.resolve(audits(holder.served) >= already + 3 ? true : undefined), { timeoutMs: 60_000 });
    const others = replicas.filter((replica) => replica !== holder);
    assert.deepEqual(
      others.map((replica) => audits(replica.served)),
      [0, 0],
    );
    const leader = async (replica: Replica): Promise<string | undefined> =>
      /^tolerator_audit_leader (\d+)$/m.exec(await metricsOf(replica.served.port, cluster.serving.ca.cert))?.[1];
    assert.equal(await leader(holder), '1');
    assert.deepEqual(await Promise.all(others.map(leader)), ['0', '0']);
    t.diagnostic(`holder ${holder.identity}, ${audits(holder.served)} audits`);
  });

  it('the holder gives the Lease up when it stops; another replica takes the audit over, still only one', async () => {
    const before = await lease();
    const holder = replicas.find((replica) => replica.identity === before.holderIdentity);
    assert.ok(holder !== undefined);
    if (holder.served === cluster.tolerator()) await cluster.stopTolerator();
    else await stopChild(holder.served.child, 'SIGTERM');
    assert.ok(
      holder.served.logs.some((entry) => entry.msg === 'audit lease acquired: this replica audits'),
      'the holder logged its acquisition',
    );
    const others = replicas.filter((replica) => replica !== holder);
    const next = await pollUntil(
      'another replica holding the Lease',
      async () => {
        const spec = await lease();
        return others.find((replica) => replica.identity === spec.holderIdentity);
      },
      // Released at shutdown: within a retry (2 to 4.4 s), not the 15 s of an abandoned Lease.
      { timeoutMs: 15_000, retryOnError: true },
    );
    assert.equal((await lease()).leaseTransitions, (before.leaseTransitions ?? 0) + 1);
    await pollUntil('an audit by the new holder', () => Promise.resolve(audits(next.served) >= 1 ? true : undefined), {
      timeoutMs: 30_000,
    });
    const third = others.find((replica) => replica !== next);
    assert.equal(audits(third!.served), 0);
  });
});
