/**
 * The Capsule recipe (policies/recipes/capsule/) on a real kube-apiserver and kube-scheduler, with
 * Capsule's Tenant CRD (test/fixtures/crds/capsule.clastix.io_tenants.yaml) and namespaces
 * labelled and annotated as Capsule's controller writes them (Capsule itself does not run): the
 * tenant label `capsule.clastix.io/tenant` and the Tenant's `spec.nodeSelector` as the
 * PodNodeSelector annotation, with tolerator's PodNodeSelector on (`--enable-plugins`), as a
 * managed cluster without the in-tree plugin would run it. Also a RuntimeClass made for tenant oil,
 * named by a tenant of gas: refused with the RuntimeClass's name, after the in-tree RuntimeClass
 * plugin merged its scheduling into the pod (read by tolerator's informer, through the shipped RBAC).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { createApiRequest } from '../../src/kube/api-requests.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import {
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const tenantLabel = 'node-restriction.kubernetes.io/tenant';
const oilTaint = { key: 'tenant', value: 'oil', effect: 'NoSchedule' };
const gasTaint = { key: 'tenant', value: 'gas', effect: 'NoSchedule' };
const container = { name: 'app', image: 'registry.example/app:1' };

function pod(name: string, namespace: string, spec: Record<string, unknown> = {}): Manifest {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec: { containers: [container], ...spec } };
}

describe(
  'Capsule tenants on the real control plane: the recipe, the Tenant nodeSelector annotation, a RuntimeClass by name',
  { skip },
  () => {
    let cluster: ToleratorOnCluster;
    let dir: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-capsule-'));
      cluster = await startToleratorOnCluster({
        dir,
        plane: { scheduler: true },
        serveArgs: ['--policies', join(REPO_ROOT, 'policies', 'recipes', 'capsule'), '--enable-plugins', 'PodNodeSelector'],
      });
      const crdFile = join(REPO_ROOT, 'test', 'fixtures', 'crds', 'capsule.clastix.io_tenants.yaml');
      await createObject(cluster.objects, parseAllDocuments(readFileSync(crdFile, 'utf8'))[0]?.toJS() as Manifest);
      await pollUntil(
        'the Tenant CRD established and served',
        async () =>
          (await createApiRequest(cluster.kubeconfig)('GET', '/apis/capsule.clastix.io/v1beta2/tenants')).status === 200 ? true : undefined,
        { timeoutMs: 30_000, retryOnError: true },
      );
      for (const tenant of ['oil', 'gas']) {
        const stored = await createObject(cluster.objects, {
          apiVersion: 'capsule.clastix.io/v1beta2',
          kind: 'Tenant',
          metadata: { name: tenant },
          spec: { owners: [{ kind: 'User', name: `${tenant}-owner` }], nodeSelector: { [tenantLabel]: tenant } },
        });
        // As Capsule's namespace controller writes a Tenant's namespace: the tenant label, the
        // Tenant's nodeSelector as the PodNodeSelector annotation, the Tenant as owner.
        await createObject(cluster.objects, {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: {
            name: `${tenant}-production`,
            labels: { 'capsule.clastix.io/tenant': tenant },
            annotations: { 'scheduler.alpha.kubernetes.io/node-selector': `${tenantLabel}=${tenant}` },
            ownerReferences: [
              {
                apiVersion: 'capsule.clastix.io/v1beta2',
                kind: 'Tenant',
                name: tenant,
                uid: String(stored.metadata.uid),
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
        });
      }
      await createFakeNodes(cluster.objects, {
        'oil-1': { labels: { [tenantLabel]: 'oil' }, taints: [oilTaint] },
        'gas-1': { labels: { [tenantLabel]: 'gas' }, taints: [gasTaint] },
        'worker-1': {},
      });
      // The platform team's RuntimeClass for tenant oil: its scheduling tolerates oil's taint (with a
      // nodeSelector too, PodNodeSelector's conflict with the Tenant's nodeSelector would refuse first).
      await createObject(cluster.objects, {
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        metadata: { name: 'kata-oil' },
        handler: 'kata',
        scheduling: { tolerations: [{ ...oilTaint, operator: 'Equal' }] },
      });
    });
    after(async () => {
      await (cluster as ToleratorOnCluster | undefined)?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("a pod of tenant oil gets the Tenant's nodeSelector and oil's pair, and the scheduler binds it to oil's node only", async () => {
      const stored = await createObject(cluster.objects, pod('drill', 'oil-production'));
      const spec = stored.spec as { nodeSelector?: Record<string, string>; tolerations?: unknown[] };
      assert.deepEqual(spec.nodeSelector, { [tenantLabel]: 'oil' });
      assert.deepEqual(
        (spec.tolerations ?? []).find((toleration) => (toleration as { key?: string }).key === 'tenant'),
        { key: 'tenant', operator: 'Equal', value: 'oil', effect: 'NoSchedule' },
      );
      const bound = await pollUntil('the scheduler binds oil-production/drill', async () => {
        const read = plain(
          await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'drill', namespace: 'oil-production' } }),
        ) as Manifest;
        return (read.spec as { nodeName?: string }).nodeName;
      });
      assert.equal(bound, 'oil-1');
    });

    it("a pod of tenant gas that tolerates oil's taint is refused", async () => {
      const answer = await refusal(
        createObject(cluster.objects, pod('sneaky', 'gas-production', { tolerations: [{ ...oilTaint, operator: 'Equal' }] })),
      );
      assert.equal(answer.code, 403);
      assert.match(answer.status.message ?? '', /tolerates the dedicated taint of group "oil"/);
    });

    it("a pod of tenant gas that asks for oil's nodes is refused by the Tenant's nodeSelector (PodNodeSelector)", async () => {
      const answer = await refusal(
        createObject(cluster.objects, pod('sneaky-selector', 'gas-production', { nodeSelector: { [tenantLabel]: 'oil' } })),
      );
      assert.match(answer.status.message ?? '', /pod node label selector conflicts with its namespace node label selector/);
    });

    it("a pod of tenant gas naming oil's RuntimeClass is refused, and the refusal names the RuntimeClass whose scheduling was merged in", async () => {
      const answer = await refusal(
        createObject(cluster.objects, pod('sneaky-runtime', 'gas-production', { runtimeClassName: 'kata-oil' })),
      );
      assert.equal(answer.code, 403);
      // kube-apiserver's RuntimeClass plugin merged kata-oil's toleration into the pod before the
      // webhooks; tolerator's informer holds kata-oil, so the refusal says where it came from.
      assert.match(
        answer.status.message ?? '',
        /tolerates the dedicated taint of group "oil" \(tenant=<group>:NoSchedule, policy "capsule-tenants"\), merged into the pod from RuntimeClass "kata-oil"'s scheduling\.tolerations by the RuntimeClass admission plugin/,
      );
    });
  },
);
