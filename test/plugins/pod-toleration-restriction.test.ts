import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Namespace, Pod, Toleration } from '../../src/api/types.js';
import type { AdmissionAttributes, Denial, Operation, PluginContext } from '../../src/plugins/plugin.js';
import type { PodTolerationRestrictionConfig } from '../../src/plugins/pod-toleration-restriction.js';
import {
  createPodTolerationRestriction,
  extractNamespaceTolerations,
  namespaceDefaultTolerationsAnnotation as defaultsKey,
  namespaceTolerationsWhitelistAnnotation as whitelistKey,
} from '../../src/plugins/pod-toleration-restriction.js';
import { daemonSetPodTolerations } from '../../src/plugins/daemonset-tolerations.js';
import { pluginContext, podAttributes } from '../support/plugin-inputs.js';

/** A context whose namespace carries the given annotations (undefined: the namespace is unknown). */
function contextWith(annotations: Record<string, string> | undefined): PluginContext {
  return pluginContext({ namespace: annotations === undefined ? undefined : { metadata: { name: 'testNamespace', annotations } } });
}

const bestEffort: Container[] = [{ name: 'test' }];
const burstable: Container[] = [{ name: 'test', resources: { limits: { cpu: '1000m' }, requests: { cpu: '500m' } } }];
const guaranteed: Container[] = [
  { name: 'test', resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1', memory: '1Gi' } } },
];

function pod(containers: Container[], tolerations: Toleration[] | null | undefined): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'testPod', namespace: 'testNamespace' }, spec: { containers, tolerations } };
}

const tv: Toleration = { key: 'testKey', operator: 'Equal', value: 'testValue', effect: 'NoSchedule' };
const tv1: Toleration = { key: 'testKey', operator: 'Equal', value: 'testValue1', effect: 'NoSchedule' };
const tv2: Toleration = { key: 'testKey', operator: 'Equal', value: 'testValue2', effect: 'NoSchedule' };
const memoryPressure: Toleration = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
const notReady300: Toleration = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };

const namespaceConflict = 'pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist';
const clusterConflict = 'pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist';

interface Given {
  readonly containers?: Container[];
  readonly tolerations: Toleration[] | null | undefined;
  readonly cluster?: PodTolerationRestrictionConfig;
  /** Namespace annotations; undefined: the namespace is unknown to the cluster state. */
  readonly annotations?: Record<string, string>;
  readonly operation?: Operation;
}

type Want = { readonly tolerations: Toleration[] | null | undefined } | { readonly denial: Denial };

function admit(given: Given): Want {
  const plugin = createPodTolerationRestriction(given.cluster ?? {});
  const object = pod(given.containers ?? bestEffort, given.tolerations);
  const outcome = plugin.admit(object, podAttributes(given.operation ?? 'CREATE', object), contextWith(given.annotations));
  if (outcome.denial !== undefined) {
    return { denial: outcome.denial };
  }
  return { tolerations: (outcome.object as Pod).spec?.tolerations };
}

/** Annotations as upstream's test builds them: a JSON list per set key. */
function annotated(defaults?: Toleration[], whitelist?: Toleration[]): Record<string, string> {
  return {
    ...(defaults === undefined ? {} : { [defaultsKey]: JSON.stringify(defaults) }),
    ...(whitelist === undefined ? {} : { [whitelistKey]: JSON.stringify(whitelist) }),
  };
}

describe('PodTolerationRestriction admit', () => {
  describe("upstream's TestPodAdmission cases", () => {
    const rows: { name: string; given: Given; want: Want }[] = [
      {
        name: 'default cluster tolerations with empty pod tolerations and nil namespace tolerations',
        given: { tolerations: [], cluster: { default: [tv] }, annotations: annotated() },
        want: { tolerations: [tv] },
      },
      {
        name: 'default cluster tolerations with pod tolerations specified',
        given: { tolerations: [tv], cluster: { default: [tv] }, annotations: annotated([]) },
        want: { tolerations: [tv] },
      },
      {
        name: 'namespace tolerations',
        given: { tolerations: [tv], cluster: { default: [] }, annotations: annotated([tv]) },
        want: { tolerations: [tv] },
      },
      {
        name: 'no pod tolerations',
        given: { tolerations: [], cluster: { default: [] }, annotations: annotated([tv]) },
        want: { tolerations: [tv] },
      },
      {
        name: 'duplicate key pod and namespace tolerations are both kept, the pod one first',
        given: { tolerations: [tv1], annotations: annotated([tv]) },
        want: { tolerations: [tv1, tv] },
      },
      {
        name: 'conflicting pod and default cluster tolerations but overridden by empty namespace tolerations',
        given: { tolerations: [tv1], cluster: { default: [tv2] }, annotations: annotated([]) },
        want: { tolerations: [tv1] },
      },
      {
        name: 'merged pod tolerations satisfy whitelist',
        given: { tolerations: [], annotations: annotated([tv], [tv]) },
        want: { tolerations: [tv] },
      },
      {
        name: 'Override default cluster toleration by empty namespace level toleration',
        given: { tolerations: [], cluster: { default: [tv] }, annotations: annotated([]) },
        want: { tolerations: [] },
      },
      {
        name: 'pod toleration conflicts with default cluster white list which is overridden by empty namespace whitelist',
        given: { tolerations: [tv], cluster: { whitelist: [tv1] }, annotations: annotated(undefined, []) },
        want: { tolerations: [tv] },
      },
      {
        name: 'merged pod tolerations conflict with the whitelist',
        given: { tolerations: [], annotations: annotated([tv], [tv1]) },
        want: { denial: { reason: 'Forbidden', message: namespaceConflict } },
      },
      {
        name: 'added memoryPressure for Burstable pod',
        given: { containers: burstable, tolerations: [], annotations: annotated([tv], []) },
        want: { tolerations: [tv, memoryPressure] },
      },
      {
        name: 'Pod with duplicate key tolerations should not be modified',
        given: { tolerations: [tv, tv1], annotations: annotated([], []) },
        want: { tolerations: [tv, tv1] },
      },
      {
        name: 'added memoryPressure for Guaranteed pod',
        given: { containers: guaranteed, tolerations: [], annotations: annotated([tv], []) },
        want: { tolerations: [tv, memoryPressure] },
      },
      {
        name: 'an UPDATE of a pod ignores the namespace defaults (TestIgnoreUpdatingInitializedPod)',
        given: { tolerations: [tv1], annotations: annotated([tv2]), operation: 'UPDATE' },
        want: { tolerations: [tv1] },
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.deepEqual(admit(row.given), row.want);
      });
    }
  });

  describe('rules (docs/kubernetes-rules.md#podtolerationrestriction)', () => {
    const rows: { name: string; given: Given; want: Want }[] = [
      {
        name: 'a namespace without the annotation falls back to the cluster default',
        given: { tolerations: undefined, cluster: { default: [tv] }, annotations: { other: 'x' } },
        want: { tolerations: [tv] },
      },
      {
        name: 'an unknown namespace falls back to the cluster default',
        given: { tolerations: undefined, cluster: { default: [tv] }, annotations: undefined },
        want: { tolerations: [tv] },
      },
      {
        name: 'an empty annotation value "" overrides the cluster default with nothing',
        given: { tolerations: undefined, cluster: { default: [tv] }, annotations: { [defaultsKey]: '' } },
        want: { tolerations: undefined },
      },
      {
        name: 'an annotation value "null" overrides the cluster default with nothing',
        given: { tolerations: undefined, cluster: { default: [tv] }, annotations: { [defaultsKey]: 'null' } },
        want: { tolerations: undefined },
      },
      {
        name: 'a BestEffort pod with no defaults is left untouched, null tolerations included',
        given: { tolerations: null, annotations: annotated() },
        want: { tolerations: null },
      },
      {
        name: 'a BestEffort pod with no defaults keeps its duplicates',
        given: { tolerations: [tv, tv], annotations: annotated() },
        want: { tolerations: [tv, tv] },
      },
      {
        name: 'a non-BestEffort pod with duplicates has them merged away on CREATE',
        given: { containers: burstable, tolerations: [tv, tv], annotations: annotated() },
        want: { tolerations: [tv, memoryPressure] },
      },
      {
        name: 'a pod that already tolerates memory-pressure gets no second one',
        given: { containers: burstable, tolerations: [{ ...memoryPressure }], annotations: annotated() },
        want: { tolerations: [memoryPressure] },
      },
      {
        name: 'a wildcard pod toleration swallows the defaults that it covers',
        given: { containers: burstable, tolerations: [{ operator: 'Exists' }], annotations: annotated([tv]) },
        want: { tolerations: [{ operator: 'Exists' }] },
      },
      {
        // Found by test/differential/daemonset.differential.ts: the DaemonSet controller's pod of
        // such a template, Burstable, comes out of the in-tree plugin (and of tolerator) so.
        name: "a Burstable DaemonSet pod whose template tolerates everything keeps that toleration alone, the controller's set merged away",
        given: {
          containers: burstable,
          tolerations: [{ operator: 'Exists' }, ...daemonSetPodTolerations(true)],
          annotations: annotated(),
        },
        want: { tolerations: [{ operator: 'Exists' }] },
      },
      {
        name: 'the namespace defaults are read case-insensitively, as encoding/json does',
        given: { tolerations: [], annotations: { [defaultsKey]: '[{"Key":"k","OPERATOR":"Exists","effect":"NoSchedule"}]' } },
        want: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }] },
      },
      {
        name: 'a whitelist without memory-pressure rejects a Burstable pod',
        given: { containers: burstable, tolerations: [tv], annotations: annotated(undefined, [tv]) },
        want: { denial: { reason: 'Forbidden', message: namespaceConflict } },
      },
      {
        name: 'a whitelist violation against the cluster whitelist names the cluster',
        given: { tolerations: [tv1], cluster: { whitelist: [tv] }, annotations: annotated() },
        want: { denial: { reason: 'Forbidden', message: clusterConflict } },
      },
      {
        name: 'tolerations added earlier by DefaultTolerationSeconds must be whitelisted too',
        given: { tolerations: [tv, notReady300], annotations: annotated(undefined, [tv]) },
        want: { denial: { reason: 'Forbidden', message: namespaceConflict } },
      },
      {
        name: 'a namespace whitelist overrides a cluster whitelist that would reject',
        given: { tolerations: [tv1], cluster: { whitelist: [tv] }, annotations: annotated(undefined, [tv1]) },
        want: { tolerations: [tv1] },
      },
      {
        name: 'a malformed defaults annotation fails CREATE with the namespace and annotation named',
        given: { tolerations: [], annotations: { [defaultsKey]: '{"key":"k"}' } },
        want: {
          denial: {
            reason: 'Forbidden',
            message: `namespace "testNamespace" annotation "${defaultsKey}": json: cannot unmarshal object into Go value of type []v1.Toleration`,
          },
        },
      },
      {
        name: 'a defaults annotation with a field of the wrong type fails with Go’s type error',
        given: { tolerations: [], annotations: { [defaultsKey]: '[{"key":5}]' } },
        want: {
          denial: {
            reason: 'Forbidden',
            message: `namespace "testNamespace" annotation "${defaultsKey}": json: cannot unmarshal number into Go struct field Toleration.key of type string`,
          },
        },
      },
      {
        name: 'a defaults annotation cut short fails CREATE with Go’s syntax error, the namespace and annotation named',
        given: { tolerations: [], annotations: { [defaultsKey]: '[{' } },
        want: {
          denial: { reason: 'Forbidden', message: `namespace "testNamespace" annotation "${defaultsKey}": unexpected end of JSON input` },
        },
      },
      {
        name: 'a defaults annotation that is not JSON fails CREATE with Go’s invalid-character error',
        given: { tolerations: [], annotations: { [defaultsKey]: 'x' } },
        want: {
          denial: {
            reason: 'Forbidden',
            message: `namespace "testNamespace" annotation "${defaultsKey}": invalid character 'x' looking for beginning of value`,
          },
        },
      },
      {
        name: 'a defaults annotation with a trailing comma fails CREATE with Go’s syntax error',
        given: { tolerations: [], annotations: { [defaultsKey]: '[{"key":"k"},]' } },
        want: {
          denial: {
            reason: 'Forbidden',
            message: `namespace "testNamespace" annotation "${defaultsKey}": invalid character ']' looking for beginning of value`,
          },
        },
      },
      {
        name: 'a malformed defaults annotation does not matter on UPDATE, where defaults are not read',
        given: { tolerations: [tv], annotations: { [defaultsKey]: '{' }, operation: 'UPDATE' },
        want: { tolerations: [tv] },
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.deepEqual(admit(row.given), row.want);
      });
    }

    it('a client-supplied status.qosClass decides the QoS class', () => {
      const plugin = createPodTolerationRestriction();
      const object: Pod = { ...pod(bestEffort, []), status: { qosClass: 'Burstable' } };
      const outcome = plugin.admit(object, podAttributes('CREATE', object), contextWith(annotated()));
      assert.deepEqual((outcome.object as Pod).spec?.tolerations, [memoryPressure]);
    });
  });

  describe('UPDATE is append-only', () => {
    const a: Toleration = { key: 'a', operator: 'Exists' };
    const aNoSchedule: Toleration = { key: 'a', operator: 'Exists', effect: 'NoSchedule' };
    const rows: { name: string; given: Given; want: Want }[] = [
      {
        name: 'a Burstable pod gets memory-pressure appended on UPDATE',
        given: { containers: burstable, tolerations: [tv], annotations: annotated(), operation: 'UPDATE' },
        want: { tolerations: [tv, memoryPressure] },
      },
      {
        name: 'on UPDATE a pod toleration the merge would drop as a subset is kept',
        given: { containers: burstable, tolerations: [a, aNoSchedule], annotations: annotated(), operation: 'UPDATE' },
        want: { tolerations: [a, aNoSchedule, memoryPressure] },
      },
      {
        name: 'on CREATE the same subset is dropped, as upstream merges',
        given: { containers: burstable, tolerations: [a, aNoSchedule], annotations: annotated() },
        want: { tolerations: [a, memoryPressure] },
      },
      {
        name: 'on UPDATE duplicates stay',
        given: { containers: burstable, tolerations: [tv, tv], annotations: annotated(), operation: 'UPDATE' },
        want: { tolerations: [tv, tv, memoryPressure] },
      },
      {
        name: 'on UPDATE the whitelist still applies to the result',
        given: { containers: burstable, tolerations: [tv], annotations: annotated(undefined, [tv]), operation: 'UPDATE' },
        want: { denial: { reason: 'Forbidden', message: namespaceConflict } },
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.deepEqual(admit(row.given), row.want);
      });
    }
  });

  it('a second run returns the same object (reinvocation)', () => {
    const plugin = createPodTolerationRestriction({ default: [tv] });
    const context = contextWith(annotated());
    const given = pod(burstable, [tv1]);
    const once = plugin.admit(given, podAttributes('CREATE', given), context).object;
    assert.ok(once !== undefined);
    assert.deepEqual((once as Pod).spec?.tolerations, [tv1, tv, memoryPressure]);
    assert.equal(plugin.admit(once, podAttributes('CREATE', once), context).object, once);
  });

  it('a namespace default whose tolerationSeconds is beyond 2^53 - 1 is refused, not added rounded (found by the differential suite)', () => {
    // kube-apiserver stores -9223372036854775808 exactly; added as the double it was rounded to,
    // it would be -9223372036854775808 - 192, which the API server fails to decode (500 InternalError).
    const plugin = createPodTolerationRestriction();
    const annotation = '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":-9223372036854775808}]';
    const given = pod(bestEffort, undefined);
    assert.deepEqual(plugin.admit(given, podAttributes('CREATE', given), contextWith({ [defaultsKey]: annotation })), {
      denial: {
        reason: 'Forbidden',
        message: `namespace "testNamespace" annotation "${defaultsKey}": toleration 0: tolerationSeconds beyond 9007199254740991 (2^53 - 1) cannot be added exactly`,
      },
    });
    // 2^53 + 1 would be stored as 2^53: refused too; 2^53 - 1 is exact and added.
    const plus = '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":9007199254740993}]';
    assert.equal(plugin.admit(given, podAttributes('CREATE', given), contextWith({ [defaultsKey]: plus })).denial?.reason, 'Forbidden');
    const safe = '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":9007199254740991}]';
    assert.deepEqual(
      (plugin.admit(given, podAttributes('CREATE', given), contextWith({ [defaultsKey]: safe })).object as Pod).spec?.tolerations,
      [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 9007199254740991 }],
    );
  });

  it('a pod that already carries that default (the in-tree plugin ran first) is left as it is: nothing is added, nothing refused', () => {
    const plugin = createPodTolerationRestriction();
    const annotation = '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":9223372036854775807}]';
    // What JSON.parse makes of the stored pod's 9223372036854775807: 2^63, the same double as the annotation's.
    const given = pod(bestEffort, [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 2 ** 63 }]);
    const outcome = plugin.admit(given, podAttributes('CREATE', given), contextWith({ [defaultsKey]: annotation }));
    assert.equal(outcome.denial, undefined);
    assert.deepEqual((outcome.object as Pod).spec?.tolerations, given.spec?.tolerations);
  });

  it('the input is not modified, kept tolerations stay the same objects, and defaults are copies', () => {
    const clusterDefault: Toleration = { ...tv };
    const plugin = createPodTolerationRestriction({ default: [clusterDefault] });
    const own: Toleration = { key: 'own', operator: 'Exists' };
    const given = pod(bestEffort, [own]);
    const snapshot = structuredClone(given);
    const [first, second] =
      (plugin.admit(given, podAttributes('CREATE', given), contextWith(annotated())).object as Pod).spec?.tolerations ?? [];
    assert.deepEqual(given, snapshot);
    assert.equal(first, own);
    assert.deepEqual(second, clusterDefault);
    assert.notEqual(second, clusterDefault);
  });
});

describe('PodTolerationRestriction validate', () => {
  const rows: { name: string; given: Given; want: Denial | undefined }[] = [
    {
      name: 'tolerations within the namespace whitelist pass',
      given: { tolerations: [tv], annotations: annotated(undefined, [tv]) },
      want: undefined,
    },
    {
      name: 'a toleration outside the namespace whitelist is forbidden',
      given: { tolerations: [tv1], annotations: annotated(undefined, [tv]) },
      want: { reason: 'Forbidden', message: namespaceConflict },
    },
    {
      name: 'a toleration outside the cluster whitelist is forbidden',
      given: { tolerations: [tv1], cluster: { whitelist: [tv] }, annotations: annotated() },
      want: { reason: 'Forbidden', message: clusterConflict },
    },
    {
      name: 'an empty whitelist allows everything',
      given: { tolerations: [tv1], cluster: { whitelist: [] }, annotations: annotated() },
      want: undefined,
    },
    {
      name: 'a pod without tolerations passes even with a malformed whitelist annotation',
      given: { tolerations: null, annotations: { [whitelistKey]: 'not json' } },
      want: undefined,
    },
    {
      name: 'a whitelist annotation that is not a list is forbidden with the namespace and annotation named',
      given: { tolerations: [tv], annotations: { [whitelistKey]: '"x"' } },
      want: {
        reason: 'Forbidden',
        message: `namespace "testNamespace" annotation "${whitelistKey}": json: cannot unmarshal string into Go value of type []v1.Toleration`,
      },
    },
    {
      name: 'a whitelist annotation that is not JSON is forbidden with Go’s syntax error',
      given: { tolerations: [tv], annotations: { [whitelistKey]: 'not json' } },
      want: {
        reason: 'Forbidden',
        message: `namespace "testNamespace" annotation "${whitelistKey}": invalid character 'o' in literal null (expecting 'u')`,
      },
    },
    {
      name: 'validate does not merge: a Burstable pod without memory-pressure passes a whitelist that lacks it',
      given: { containers: burstable, tolerations: [tv], annotations: annotated(undefined, [tv]) },
      want: undefined,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plugin = createPodTolerationRestriction(row.given.cluster ?? {});
      const object = pod(row.given.containers ?? bestEffort, row.given.tolerations);
      const outcome = plugin.validate(object, podAttributes(row.given.operation ?? 'CREATE', object), contextWith(row.given.annotations));
      assert.deepEqual(outcome.denial, row.want);
    });
  }
});

describe('PodTolerationRestriction handles', () => {
  const plugin = createPodTolerationRestriction({ default: [tv] });
  const object = pod(bestEffort, []);
  const rows: { name: string; given: AdmissionAttributes; want: boolean }[] = [
    { name: 'pod CREATE is handled', given: podAttributes('CREATE', object), want: true },
    { name: 'pod UPDATE is handled', given: podAttributes('UPDATE', object), want: true },
    { name: 'pod DELETE is not handled', given: podAttributes('DELETE', object), want: false },
    { name: 'pod CONNECT is not handled', given: podAttributes('CONNECT', object), want: false },
    { name: 'a pod subresource is ignored', given: podAttributes('UPDATE', object, { subResource: 'status' }), want: false },
    {
      name: 'a non-pod resource is ignored',
      given: { ...podAttributes('CREATE', object), resource: { group: '', version: 'v1', resource: 'configmaps' } },
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(plugin.handles(row.given), row.want);
      if (!row.want) {
        assert.equal(plugin.admit(object, row.given, contextWith(annotated())).object, object);
        assert.equal(plugin.validate(object, row.given, contextWith(annotated(undefined, [tv1]))).denial, undefined);
      }
    });
  }
});

describe('extractNamespaceTolerations', () => {
  const namespace = (annotations?: Record<string, string>): Namespace => ({ metadata: { name: 'ns', annotations } });
  const rows: { name: string; given: Namespace | undefined; want: ReturnType<typeof extractNamespaceTolerations> }[] = [
    { name: 'a namespace without annotations is unset', given: namespace(), want: { tolerations: undefined } },
    { name: 'a namespace without the key is unset', given: namespace({ other: '[]' }), want: { tolerations: undefined } },
    { name: 'an unknown namespace is unset', given: undefined, want: { tolerations: undefined } },
    { name: '"" is an empty override', given: namespace({ [defaultsKey]: '' }), want: { tolerations: [] } },
    { name: '"[]" is an empty override', given: namespace({ [defaultsKey]: '[]' }), want: { tolerations: [] } },
    { name: '"null" is an empty override', given: namespace({ [defaultsKey]: 'null' }), want: { tolerations: [] } },
    {
      name: 'a list is decoded, empty strings and nulls dropped, unknown fields ignored',
      given: namespace({
        [defaultsKey]: '[{"key":"k","operator":"Equal","value":"","effect":"NoExecute","tolerationSeconds":60,"extra":1}, null]',
      }),
      want: { tolerations: [{ key: 'k', operator: 'Equal', effect: 'NoExecute', tolerationSeconds: 60 }, {}] },
    },
    {
      name: 'a fractional tolerationSeconds is a type error',
      given: namespace({ [defaultsKey]: '[{"key":"k","tolerationSeconds":1.5}]' }),
      want: {
        error: `namespace "ns" annotation "${defaultsKey}": json: cannot unmarshal number 1.5 into Go struct field Toleration.tolerationSeconds of type int64`,
      },
    },
    {
      name: 'a whole tolerationSeconds written with an exponent (1e3) is a type error, as in Go',
      given: namespace({ [defaultsKey]: '[{"key":"k","tolerationSeconds":1e3}]' }),
      want: {
        error: `namespace "ns" annotation "${defaultsKey}": json: cannot unmarshal number 1e3 into Go struct field Toleration.tolerationSeconds of type int64`,
      },
    },
    {
      name: 'a syntax error beats an earlier type error, as Go checks the syntax first',
      given: namespace({ [defaultsKey]: '[{"key":5},' }),
      want: { error: `namespace "ns" annotation "${defaultsKey}": unexpected end of JSON input` },
    },
    {
      name: 'a list element that is not an object is a type error',
      given: namespace({ [defaultsKey]: '[true]' }),
      want: { error: `namespace "ns" annotation "${defaultsKey}": json: cannot unmarshal bool into Go value of type v1.Toleration` },
    },
    {
      name: 'an operator of the wrong type names its Go type',
      given: namespace({ [defaultsKey]: '[{"operator":["Exists"]}]' }),
      want: {
        error: `namespace "ns" annotation "${defaultsKey}": json: cannot unmarshal array into Go struct field Toleration.operator of type v1.TolerationOperator`,
      },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(extractNamespaceTolerations(row.given, defaultsKey), row.want);
    });
  }
});
