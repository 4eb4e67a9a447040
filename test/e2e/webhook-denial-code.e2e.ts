/**
 * What a webhook's denial with status code 500 becomes for the client, on the real kube-apiserver:
 * why tolerator answers PodTolerationRestriction's and PodNodeSelector's refusals with 403 where
 * the in-tree plugins answer 500 (docs/kubernetes-rules.md, "Deliberate differences").
 *
 * A denial (`allowed: false`) is never a failed call: the failurePolicy applies only when calling
 * the webhook fails. kube-apiserver makes the client's error of the denial's `status` as the
 * webhook sent it, its message prefixed with `admission webhook "NAME" denied the request: `
 * (ToStatusErr, staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go;
 * the same on v1.35.8 and v1.37.2): code and reason pass through. So a 500 denial is a refusal the
 * client reads as the API server failing, and the code is the webhook's choice.
 *
 * A small webhook in this process denies every pod with the code its annotation names; it is
 * registered with `failurePolicy: Ignore`, so a pod that got through would show it.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createCertificateAuthority, signCertificate } from '../cluster/pki.js';
import { pollUntil } from '../cluster/poll.js';
import { apiError, clientsFor, createObject, refusal, type Manifest } from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const webhookName = 'deny.webhook-denial-code.test';
const codeAnnotation = 'webhook-denial-code.test/code';
const denialText = 'the toleration is not in the namespace whitelist';

function pod(name: string, code: number): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations: { [codeAnnotation]: String(code) } },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
}

describe('a webhook denial with status code 500 on kube-apiserver', { skip }, () => {
  let plane: ControlPlane;
  let webhook: Server;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-denial-code-'));
    plane = await startControlPlane({ dir, temporaryDir: true });
    const ca = await createCertificateAuthority('denial-code-webhook-ca');
    const leaf = await signCertificate(ca, { commonName: 'denial-code-webhook', ips: ['127.0.0.1'], usage: 'server' });
    // Denies every pod, with the status code its annotation names.
    webhook = createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          request: { uid: string; object?: { metadata?: { annotations?: Record<string, string> } } };
        };
        const code = Number(review.request.object?.metadata?.annotations?.[codeAnnotation] ?? '403');
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: review.request.uid, allowed: false, status: { code, message: denialText } },
          }),
        );
      });
    });
    webhook.listen(0, '127.0.0.1');
    await once(webhook, 'listening');
    const { port } = webhook.address() as AddressInfo;
    const { objects } = clientsFor(plane.kubeconfig);
    await createObject(objects, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'webhook-denial-code' },
      webhooks: [
        {
          name: webhookName,
          // If a denial were a failed call, Ignore would let the pod in.
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
          clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle: Buffer.from(ca.cert).toString('base64') },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
        },
      ],
    });
    // The API server's webhook configuration cache catches up within about a second.
    await pollUntil('the denying webhook to be called', async () => {
      const answer = await refusal(createObject(objects, pod('probe', 403), 'All')).catch(() => undefined);
      return answer?.code === 403 ? true : undefined;
    });
  });
  after(async () => {
    webhook.close();
    await (plane as ControlPlane | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a webhook denial with status code 500 is still a denial, not a failed call: the client gets 500 and the status as sent (no reason), and failurePolicy Ignore does not admit the pod', async (t) => {
    const { objects } = clientsFor(plane.kubeconfig);
    const { code, status } = await refusal(createObject(objects, pod('denied-with-500', 500)));
    t.diagnostic(`kube-apiserver ${plane.version}: ${code} ${JSON.stringify(status)}`);
    assert.equal(code, 500);
    assert.deepEqual(status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `admission webhook "${webhookName}" denied the request: ${denialText}`,
      code: 500,
    });
    const stored = await objects
      .read({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'denied-with-500', namespace: 'default' } })
      .then(() => 200)
      .catch((error: unknown) => apiError(error).code);
    assert.equal(stored, 404, 'the pod was not created');
  });

  it("the same denial with 403 gets 403 and the same text: the code (and reason) is the webhook's choice, passed through", async (t) => {
    const { objects } = clientsFor(plane.kubeconfig);
    const { code, status } = await refusal(createObject(objects, pod('denied-with-403', 403)));
    t.diagnostic(`kube-apiserver ${plane.version}: ${code} ${JSON.stringify(status)}`);
    assert.equal(code, 403);
    assert.deepEqual(
      [status.code, status.reason, status.message],
      [403, undefined, `admission webhook "${webhookName}" denied the request: ${denialText}`],
    );
  });
});
