import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { denialStatus } from '../../src/admission/status.js';
import type { JsonObject, Namespace, Pod } from '../../src/api/types.js';
import type { Denial } from '../../src/plugins/plugin.js';
import { createPodNodeSelector } from '../../src/plugins/pod-node-selector.js';
import { namespaceNodeSelectorAnnotation, parseSelectorLabels, type LabelSet } from '../../src/scheduling/namespace-node-selector.js';
import { admissionAttributes, pluginContext, podAttributes, type RequestResource } from '../support/plugin-inputs.js';

/** The text of a Forbidden denial (before errors.NewForbidden's prefix); '' for none. */
function text(denial: Denial | undefined): string {
  return denial?.reason === 'Forbidden' ? denial.message : '';
}

const daemonSetResource: RequestResource = { group: 'apps', resource: 'daemonsets', kind: 'DaemonSet' };

function selector(text: string): LabelSet {
  const parsed = parseSelectorLabels(text);
  assert.equal(parsed.error, undefined, text);
  return parsed.labels;
}

/** The plugin with upstream's test configuration: a cluster default, and a whitelist for testNamespace. */
function plugin(defaultNodeSelector = '', whitelist = '') {
  return createPodNodeSelector({
    clusterDefault: selector(defaultNodeSelector),
    whitelists: new Map([['testNamespace', selector(whitelist)]]),
  });
}

/** testNamespace, with the annotation when given (undefined: none at all). */
function testNamespace(annotation?: string): Namespace {
  return {
    metadata: {
      name: 'testNamespace',
      ...(annotation === undefined ? {} : { annotations: { [namespaceNodeSelectorAnnotation]: annotation } }),
    },
  };
}

function pod(nodeSelector: Record<string, string> | undefined, name = 'testPod'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...(name === '' ? { generateName: 'test-' } : { name }), namespace: 'testNamespace' },
    spec: { containers: [{ name: 'c' }], ...(nodeSelector === undefined ? {} : { nodeSelector }) },
  };
}

describe("PodNodeSelector: upstream's TestPodAdmission table (Admit, then Validate on the result)", () => {
  const rows: {
    testName: string;
    defaultNodeSelector: string;
    /** undefined: upstream's ignoreTestNamespaceNodeSelector, the namespace has no annotation. */
    namespaceNodeSelector?: string;
    whitelist?: string;
    podNodeSelector: Record<string, string>;
    mergedNodeSelector?: Record<string, string>;
    admit: boolean;
  }[] = [
    { testName: 'No node selectors', defaultNodeSelector: '', podNodeSelector: {}, mergedNodeSelector: {}, admit: true },
    {
      testName: 'Default node selector and no conflicts',
      defaultNodeSelector: 'infra = false',
      podNodeSelector: {},
      mergedNodeSelector: { infra: 'false' },
      admit: true,
    },
    {
      testName: 'TestNamespace node selector with whitespaces and no conflicts',
      defaultNodeSelector: '',
      namespaceNodeSelector: ' infra = false ',
      podNodeSelector: {},
      mergedNodeSelector: { infra: 'false' },
      admit: true,
    },
    {
      testName: 'Default and namespace node selector, no conflicts',
      defaultNodeSelector: 'infra = false',
      namespaceNodeSelector: 'infra=true',
      podNodeSelector: {},
      mergedNodeSelector: { infra: 'true' },
      admit: true,
    },
    {
      testName: 'Empty namespace node selector and no conflicts',
      defaultNodeSelector: 'infra = false',
      namespaceNodeSelector: '',
      podNodeSelector: {},
      mergedNodeSelector: {},
      admit: true,
    },
    {
      testName: 'TestNamespace and pod node selector, no conflicts',
      defaultNodeSelector: 'infra = false',
      namespaceNodeSelector: 'infra=true',
      podNodeSelector: { env: 'test' },
      mergedNodeSelector: { infra: 'true', env: 'test' },
      admit: true,
    },
    {
      testName: 'Conflicting pod and namespace node selector, one label',
      defaultNodeSelector: 'env = test',
      namespaceNodeSelector: 'infra=true',
      podNodeSelector: { infra: 'false' },
      admit: false,
    },
    {
      testName: 'Conflicting pod and namespace node selector, multiple labels',
      defaultNodeSelector: 'env=dev',
      namespaceNodeSelector: 'infra=false, env = test',
      podNodeSelector: { env: 'dev', color: 'blue' },
      admit: false,
    },
    {
      testName: 'Merged pod node selectors satisfy the whitelist',
      defaultNodeSelector: 'env=dev',
      namespaceNodeSelector: 'infra=false, env = dev',
      whitelist: 'env=dev, infra=false, color=blue',
      podNodeSelector: { env: 'dev', color: 'blue' },
      mergedNodeSelector: { infra: 'false', env: 'dev', color: 'blue' },
      admit: true,
    },
    {
      testName: 'Merged pod node selectors conflict with the whitelist',
      defaultNodeSelector: 'env=dev',
      namespaceNodeSelector: 'infra=false, env = dev',
      whitelist: 'env=dev, infra=true, color=blue',
      podNodeSelector: { env: 'dev', color: 'blue' },
      admit: false,
    },
    {
      testName: 'Default node selector conflict with the whitelist',
      defaultNodeSelector: 'env=dev',
      whitelist: 'env=prd',
      podNodeSelector: {},
      admit: false,
    },
  ];
  for (const row of rows) {
    it(row.testName, () => {
      const subject = plugin(row.defaultNodeSelector, row.whitelist);
      const context = pluginContext({ namespace: testNamespace(row.namespaceNodeSelector) });
      const object = pod(row.podNodeSelector);
      const admitted = subject.admit(object, podAttributes('CREATE', object), context);
      assert.equal(admitted.denial === undefined, row.admit, text(admitted.denial));
      if (admitted.object === undefined) {
        return;
      }
      assert.deepEqual((admitted.object as Pod).spec?.nodeSelector ?? {}, row.mergedNodeSelector);
      const validated = subject.validate(admitted.object, podAttributes('CREATE', admitted.object), context);
      assert.equal(validated.denial, undefined);
    });
  }
});

describe('PodNodeSelector: which requests (TestHandles, shouldIgnore)', () => {
  const subject = plugin('infra=true');
  for (const [operation, handled] of [
    ['CREATE', true],
    ['UPDATE', false],
    ['DELETE', false],
    ['CONNECT', false],
  ] as const) {
    it(`a pod ${operation} is ${handled ? '' : 'not '}handled`, () => {
      assert.equal(subject.handles(podAttributes(operation, pod({}))), handled);
    });
  }

  it('subresources and other resources are not handled (binding, status, a ConfigMap)', () => {
    assert.equal(subject.handles(podAttributes('CREATE', pod({}), { subResource: 'binding' })), false);
    assert.equal(subject.handles(podAttributes('UPDATE', pod({}), { subResource: 'status' })), false);
    assert.equal(subject.handles(admissionAttributes({ group: '', resource: 'configmaps', kind: 'ConfigMap' }, 'CREATE', {})), false);
    assert.equal(subject.handles(admissionAttributes({ group: 'apps', resource: 'deployments', kind: 'Deployment' }, 'CREATE', {})), false);
  });

  it("DaemonSets are handled on CREATE and UPDATE (tolerator's addition), not their status", () => {
    assert.equal(subject.handles(admissionAttributes(daemonSetResource, 'CREATE', {})), true);
    assert.equal(subject.handles(admissionAttributes(daemonSetResource, 'UPDATE', {})), true);
    assert.equal(subject.handles(admissionAttributes(daemonSetResource, 'DELETE', undefined)), false);
    assert.equal(subject.handles(admissionAttributes(daemonSetResource, 'UPDATE', {}, { subResource: 'status' })), false);
  });

  it('a pod UPDATE is left alone even when it conflicts (the selector of a pod is fixed at creation)', () => {
    const object = pod({ infra: 'false' });
    const context = pluginContext({ namespace: testNamespace() });
    assert.deepEqual(subject.admit(object, podAttributes('UPDATE', object), context), { object });
    assert.deepEqual(subject.validate(object, podAttributes('UPDATE', object), context), {});
  });
});

describe('PodNodeSelector: answers as kube-apiserver words them', () => {
  const context = pluginContext({ namespace: testNamespace('infra=true') });

  it('a conflict is errors.NewForbidden on the pod: 403, upstream text, details {name, kind: pods}', () => {
    const object = pod({ infra: 'false' });
    const denial = plugin().admit(object, podAttributes('CREATE', object), context).denial;
    assert.ok(denial !== undefined);
    assert.deepEqual(denialStatus(denial), {
      metadata: {},
      status: 'Failure',
      message: 'pods "testPod" is forbidden: pod node label selector conflicts with its namespace node label selector',
      reason: 'Forbidden',
      details: { name: 'testPod', kind: 'pods' },
      code: 403,
    });
  });

  it('a pod whose name is still to be generated (mutating admission) is "pods is forbidden", with no name in details', () => {
    const object = pod({ infra: 'false' }, '');
    const denial = plugin().admit(object, podAttributes('CREATE', object), context).denial;
    assert.ok(denial !== undefined);
    const status = denialStatus(denial);
    assert.equal(status.message, 'pods is forbidden: pod node label selector conflicts with its namespace node label selector');
    assert.deepEqual(status.details, { kind: 'pods' });
  });

  it('the validating side refuses the same conflict (the mutating call may have been skipped)', () => {
    const object = pod({ infra: 'false' });
    const denial = plugin().validate(object, podAttributes('CREATE', object), context).denial;
    assert.equal(text(denial), 'pod node label selector conflicts with its namespace node label selector');
  });

  it('a whitelist violation has its own text', () => {
    const object = pod({ color: 'red' });
    const denial = plugin('', 'color=blue').validate(
      object,
      podAttributes('CREATE', object),
      pluginContext({ namespace: testNamespace() }),
    ).denial;
    assert.ok(denial !== undefined);
    assert.equal(
      denialStatus(denial).message,
      'pods "testPod" is forbidden: pod node label selector labels conflict with its namespace whitelist',
    );
  });

  it("the validating side refuses a pod created without the namespace's labels (the mutating webhook was skipped)", () => {
    const object = pod({});
    const denial = plugin().validate(object, podAttributes('CREATE', object), context).denial;
    assert.ok(denial !== undefined);
    assert.deepEqual(denialStatus(denial), {
      metadata: {},
      status: 'Failure',
      message:
        'pods "testPod" is forbidden: pod node label selector lacks its namespace node label selector\'s labels, which ' +
        "tolerator's mutating webhook adds: the object did not pass that webhook (unavailable, timed out or skipped); missing: infra=true",
      reason: 'Forbidden',
      details: { name: 'testPod', kind: 'pods' },
      code: 403,
    });
  });

  it('the validating side passes what the mutating side produced, and a pod of a namespace without a selector', () => {
    const object = pod({ app: 'web' });
    const admitted = plugin().admit(object, podAttributes('CREATE', object), context).object;
    assert.ok(admitted !== undefined);
    assert.deepEqual(plugin().validate(admitted, podAttributes('CREATE', admitted), context), {});
    assert.deepEqual(plugin().validate(object, podAttributes('CREATE', object), pluginContext({ namespace: testNamespace('') })), {});
  });

  it('a missing-labels denial names at most 10 labels and counts the rest', () => {
    const labels = Array.from({ length: 25 }, (_, index) => `k${index}=v`).join(',');
    const object = pod({});
    const message = text(
      plugin().validate(object, podAttributes('CREATE', object), pluginContext({ namespace: testNamespace(labels) })).denial,
    );
    assert.match(message, /missing: k0=v, k1=v, .*, k9=v and 15 more$/);
  });

  it('an annotation that does not parse refuses the pod with 403 (not 500), naming the namespace and the annotation', () => {
    const broken = pluginContext({ namespace: testNamespace('infra') });
    const object = pod({});
    for (const outcome of [
      plugin().admit(object, podAttributes('CREATE', object), broken),
      plugin().validate(object, podAttributes('CREATE', object), broken),
    ]) {
      assert.ok(outcome.denial !== undefined);
      assert.deepEqual(denialStatus(outcome.denial), {
        metadata: {},
        status: 'Failure',
        message: 'namespace "testNamespace" annotation "scheduler.alpha.kubernetes.io/node-selector": invalid selector: [infra]',
        reason: 'Forbidden',
        code: 403,
      });
    }
  });

  it('an unknown namespace reads as one without the annotation: the cluster default applies', () => {
    const object = pod({});
    const outcome = plugin('infra=false').admit(object, podAttributes('CREATE', object), pluginContext());
    assert.deepEqual((outcome.object as Pod).spec?.nodeSelector, { infra: 'false' });
  });

  it('nothing to merge: the very same object (no patch)', () => {
    const object = pod({ infra: 'true' });
    assert.equal(plugin().admit(object, podAttributes('CREATE', object), context).object, object);
  });

  it('a pod without nodeSelector gets one; nothing else of the pod changes', () => {
    const object = pod(undefined);
    const admitted = plugin().admit(object, podAttributes('CREATE', object), context).object as Pod;
    assert.deepEqual(admitted, { ...object, spec: { ...object.spec, nodeSelector: { infra: 'true' } } });
    assert.equal(admitted.metadata, object.metadata, 'untouched parts are shared, not copied');
  });

  it('a mirror pod from its kubelet is not refused (refusing would only hide the static pod)', () => {
    const object: Pod = {
      ...pod({ infra: 'false' }),
      metadata: { name: 'etcd-node-1', annotations: { 'kubernetes.io/config.mirror': 'x' } },
    };
    const attributes = {
      ...podAttributes('CREATE', object),
      userInfo: { username: 'system:node:node-1', uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} },
    };
    assert.deepEqual(plugin().validate(object, attributes, context), {});
  });
});

describe("PodNodeSelector: DaemonSet templates (tolerator's addition against the DaemonSet loop)", () => {
  const context = pluginContext({ namespace: testNamespace('infra=true, zone=a') });

  function daemonSet(nodeSelector: Record<string, string> | undefined, image = 'agent:1', labels: Record<string, string> = {}): JsonObject {
    return {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'node-agent', namespace: 'testNamespace', labels },
      spec: {
        selector: { matchLabels: { app: 'node-agent' } },
        template: {
          metadata: { labels: { app: 'node-agent' } },
          spec: { containers: [{ name: 'agent', image }], ...(nodeSelector === undefined ? {} : { nodeSelector }) },
        },
      },
    };
  }
  const templateSelector = (object: JsonObject | undefined): unknown =>
    ((object?.spec as JsonObject).template as { spec: { nodeSelector?: unknown } }).spec.nodeSelector;

  it("CREATE: the namespace's selector is merged into spec.template.spec.nodeSelector", () => {
    const object = daemonSet({ 'kubernetes.io/os': 'linux', zone: 'a' });
    const outcome = plugin().admit(object, admissionAttributes(daemonSetResource, 'CREATE', object), context);
    assert.deepEqual(templateSelector(outcome.object), { 'kubernetes.io/os': 'linux', zone: 'a', infra: 'true' });
  });

  it('CREATE of a template that conflicts is refused at the DaemonSet, as errors.NewForbidden would name it', () => {
    const object = daemonSet({ zone: 'b' });
    for (const outcome of [
      plugin().admit(object, admissionAttributes(daemonSetResource, 'CREATE', object), context),
      plugin().validate(object, admissionAttributes(daemonSetResource, 'CREATE', object), context),
    ]) {
      assert.ok(outcome.denial !== undefined);
      assert.deepEqual(denialStatus(outcome.denial), {
        metadata: {},
        status: 'Failure',
        message:
          'daemonsets.apps "node-agent" is forbidden: spec.template.spec.nodeSelector conflicts with its namespace node label selector ' +
          "(zone=b, the namespace requires zone=a): every pod the DaemonSet creates would be refused by the namespace's PodNodeSelector",
        reason: 'Forbidden',
        details: { name: 'node-agent', group: 'apps', kind: 'daemonsets' },
        code: 403,
      });
    }
  });

  it('CREATE of a template that leaves the whitelist once merged is refused', () => {
    const object = daemonSet({});
    const outcome = plugin('', 'infra=true').admit(object, admissionAttributes(daemonSetResource, 'CREATE', object), context);
    assert.match(text(outcome.denial), /conflicts with its namespace whitelist \(zone=a is not in it\)/);
  });

  it('an UPDATE that changes the template is judged and merged like a CREATE', () => {
    const old = daemonSet({}, 'agent:1');
    const object = daemonSet({}, 'agent:2');
    const attributes = admissionAttributes(daemonSetResource, 'UPDATE', object, { oldObject: old });
    assert.deepEqual(templateSelector(plugin().admit(object, attributes, context).object), { infra: 'true', zone: 'a' });
    const conflicting = daemonSet({ infra: 'false' }, 'agent:2');
    const refused = admissionAttributes(daemonSetResource, 'UPDATE', conflicting, { oldObject: daemonSet({ infra: 'false' }) });
    assert.ok(plugin().admit(conflicting, refused, context).denial !== undefined);
    assert.ok(plugin().validate(conflicting, refused, context).denial !== undefined);
  });

  it('an UPDATE that leaves the template alone changes nothing and refuses nothing: a conflict is a warning', () => {
    const old = daemonSet({ infra: 'false' });
    const object = daemonSet({ infra: 'false' }, 'agent:1', { team: 'infra' });
    const attributes = admissionAttributes(daemonSetResource, 'UPDATE', object, { oldObject: old });
    assert.deepEqual(plugin().admit(object, attributes, context), { object });
    assert.deepEqual(plugin().validate(object, attributes, context), {
      warnings: [
        'PodNodeSelector: DaemonSet "node-agent": spec.template.spec.nodeSelector conflicts with its namespace node label selector ' +
          "(infra=false, the namespace requires infra=true): every pod the DaemonSet creates would be refused by the namespace's PodNodeSelector",
      ],
    });
    const unmerged = daemonSet({});
    const quiet = admissionAttributes(daemonSetResource, 'UPDATE', unmerged, { oldObject: daemonSet({}) });
    assert.deepEqual(plugin().admit(unmerged, quiet, context), { object: unmerged }, 'no selector added: that would roll running pods out');
    assert.deepEqual(plugin().validate(unmerged, quiet, context), {});
  });

  it("a template written without the namespace's labels is refused on the validating side; one left alone is not", () => {
    const object = daemonSet({ zone: 'a' });
    const created = plugin().validate(object, admissionAttributes(daemonSetResource, 'CREATE', object), context);
    assert.match(
      text(created.denial),
      /^spec\.template\.spec\.nodeSelector lacks its namespace node label selector's labels.*; missing: infra=true$/,
    );
    const untouched = admissionAttributes(daemonSetResource, 'UPDATE', object, { oldObject: daemonSet({ zone: 'a' }) });
    assert.deepEqual(plugin().validate(object, untouched, context), {});
    const admitted = plugin().admit(object, admissionAttributes(daemonSetResource, 'CREATE', object), context).object;
    assert.ok(admitted !== undefined);
    assert.deepEqual(plugin().validate(admitted, admissionAttributes(daemonSetResource, 'CREATE', admitted), context), {});
  });

  it('a namespace with no selector leaves the template alone', () => {
    const object = daemonSet({ anything: 'goes' });
    const outcome = plugin().admit(
      object,
      admissionAttributes(daemonSetResource, 'CREATE', object),
      pluginContext({ namespace: testNamespace('') }),
    );
    assert.equal(outcome.object, object);
  });

  it('a broken namespace annotation refuses a new template too', () => {
    const object = daemonSet({});
    const outcome = plugin().admit(
      object,
      admissionAttributes(daemonSetResource, 'CREATE', object),
      pluginContext({ namespace: testNamespace('x') }),
    );
    assert.match(
      text(outcome.denial),
      /^namespace "testNamespace" annotation "scheduler\.alpha\.kubernetes\.io\/node-selector": invalid selector: \[x\]; every pod/,
    );
  });

  it('long keys and values of the template are clipped in the message', () => {
    const long = 'v'.repeat(10_000);
    const object = daemonSet({ zone: long });
    const message = text(plugin().validate(object, admissionAttributes(daemonSetResource, 'CREATE', object), context).denial);
    assert.ok(message.length < 600, `${message.length} characters`);
    assert.match(message, /more characters\)/);
  });

  it('a DaemonSet without a template is left to the API server', () => {
    const object: JsonObject = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'x' }, spec: {} };
    assert.deepEqual(plugin().admit(object, admissionAttributes(daemonSetResource, 'CREATE', object), context), { object });
    assert.deepEqual(plugin().validate(object, admissionAttributes(daemonSetResource, 'CREATE', object), context), {});
  });
});

describe('PodNodeSelector reads a namespace once per Namespace object', () => {
  it('parses the annotation once for every pod of the same Namespace object, and again once the namespace changes', () => {
    let reads = 0;
    const counted = (annotation: string): Namespace => {
      const annotations: Record<string, string> = {};
      Object.defineProperty(annotations, namespaceNodeSelectorAnnotation, {
        enumerable: true,
        get: () => {
          reads++;
          return annotation;
        },
      });
      return { metadata: { name: 'testNamespace', annotations } };
    };
    const subject = plugin();
    const first = pluginContext({ namespace: counted('zone=a') });
    for (let i = 0; i < 5; i++) {
      const object = pod({}, `p${i}`);
      const admitted = subject.admit(object, podAttributes('CREATE', object), first).object as Pod;
      assert.deepEqual(admitted.spec?.nodeSelector, { zone: 'a' });
      assert.deepEqual(subject.validate(admitted, podAttributes('CREATE', admitted), first), {});
    }
    assert.equal(reads, 1);
    const changed = pluginContext({ namespace: counted('zone=b') });
    const object = pod({});
    assert.deepEqual((subject.admit(object, podAttributes('CREATE', object), changed).object as Pod).spec?.nodeSelector, { zone: 'b' });
    assert.equal(reads, 2);
  });
});
