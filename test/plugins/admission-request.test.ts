import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAdmissionReview } from '../../src/admission/review.js';
import type { JsonObject } from '../../src/api/types.js';
import { celRequest, nobody, offlineAttributes, offlineReview } from '../../src/plugins/admission-request.js';

const deployment: JsonObject = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' }, spec: {} };
const alice = { username: 'alice', uid: 'u-1', groups: ['platform-admins'], extra: { scope: ['a'] } };

describe('a request made up offline', () => {
  it('names the kind and resource the API server would, with no subresource, dryRun false and nobody as its user', () => {
    const attributes = offlineAttributes({ object: deployment, operation: 'CREATE', namespace: 'shop' });
    assert.deepEqual(attributes, {
      operation: 'CREATE',
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      subResource: '',
      namespace: 'shop',
      name: 'web',
      object: deployment,
      oldObject: undefined,
      dryRun: false,
      userInfo: nobody,
    });
  });

  const guessed: [string, string][] = [
    ['NetworkPolicy', 'networkpolicies'],
    ['Ingress', 'ingresses'],
    ['ConfigMap', 'configmaps'],
    ['', ''],
  ];
  for (const [kind, resource] of guessed) {
    it(`guesses the resource of a kind it does not list as UnsafeGuessKindToResource does: ${kind || '(none)'} → ${resource || '(none)'}`, () => {
      const object = { apiVersion: 'networking.k8s.io/v1', kind, metadata: { name: 'x' } };
      assert.equal(offlineAttributes({ object, operation: 'CREATE', namespace: 'n' }).resource.resource, resource);
    });
  }

  it('reads back, through the parse every review goes through, as the same attributes', () => {
    const request = { object: deployment, oldObject: deployment, operation: 'UPDATE' as const, namespace: 'shop', dryRun: true };
    const parsed = parseAdmissionReview(JSON.stringify(offlineReview(request, 'uid-1', alice)));
    assert.equal(parsed.uid, 'uid-1');
    const { envelope, ...attributes } = parsed.attributes;
    assert.deepEqual(attributes, { ...offlineAttributes(request, alice) });
    assert.deepEqual(envelope, { uid: 'uid-1' });
  });
});

describe('the CEL `request` variable', () => {
  const podAttributes = offlineAttributes(
    { object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } }, operation: 'CREATE', namespace: 'n' },
    alice,
  );

  it("carries a pod's requester, and the envelope as sent", () => {
    const request = celRequest({ ...podAttributes, envelope: { uid: 'r-1', requestKind: { kind: 'Pod' } } }, 'Pod');
    assert.deepEqual(request, {
      uid: 'r-1',
      requestKind: { kind: 'Pod' },
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      subResource: '',
      name: 'p',
      namespace: 'n',
      operation: 'CREATE',
      userInfo: alice,
      dryRun: false,
    });
  });

  it("gives a template nobody as its requester: the controller, not the workload's writer, creates the pods", () => {
    const request = celRequest(offlineAttributes({ object: deployment, operation: 'CREATE', namespace: 'shop' }, alice), 'Deployment');
    assert.deepEqual(request.userInfo, nobody);
  });
});
