import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/api/types.js';
import { denialStatus } from '../../src/admission/status.js';
import type { Operation } from '../../src/plugins/plugin.js';
import {
  createDeviceTaintRuleSafety,
  selectAllDevicesAnnotation,
  skipDryRunAnnotation,
  type DeviceTaintRuleEnforcement,
} from '../../src/plugins/device-taint-rule-safety.js';
import { admissionAttributes, type RequestResource } from '../support/plugin-inputs.js';

const rules: RequestResource = { group: 'resource.k8s.io', resource: 'devicetaintrules', kind: 'DeviceTaintRule' };
const gpu0 = { driver: 'gpu.example.com', pool: 'worker-0', device: 'gpu-0' };

interface RuleShape {
  readonly selector?: Record<string, unknown> | null;
  readonly effect: string;
  readonly key?: string;
  readonly annotations?: Record<string, string>;
  readonly generation?: number;
  /** The observedGeneration of the controller's EvictionInProgress condition, if it has written one. */
  readonly simulatedGeneration?: number;
}

function rule(shape: RuleShape): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceTaintRule',
    metadata: {
      name: 'drain-gpu-0',
      ...(shape.generation === undefined ? {} : { generation: shape.generation }),
      ...(shape.annotations === undefined ? {} : { annotations: shape.annotations }),
    },
    spec: {
      ...(shape.selector === undefined ? {} : { deviceSelector: shape.selector }),
      taint: { key: shape.key ?? 'example.com/maintenance', effect: shape.effect },
    },
    ...(shape.simulatedGeneration === undefined
      ? {}
      : {
          status: {
            conditions: [
              {
                type: 'EvictionInProgress',
                status: 'False',
                reason: 'NoEffect',
                observedGeneration: shape.simulatedGeneration,
                message:
                  '1 published devices selected. 1 allocated devices selected. 3 pods would be evicted in 2 namespaces if the effect was NoExecute.',
              },
            ],
          },
        }),
  };
}

function decide(operation: Operation, object: JsonObject, oldObject?: JsonObject, enforcement?: DeviceTaintRuleEnforcement) {
  const plugin = createDeviceTaintRuleSafety(enforcement === undefined ? {} : { enforcement });
  const attrs = admissionAttributes(rules, operation, object, { oldObject, namespace: '' });
  assert.equal(plugin.handles(attrs), true);
  return plugin.validate(object, attrs);
}

function refusal(operation: Operation, object: JsonObject, oldObject?: JsonObject): string | undefined {
  const outcome = decide(operation, object, oldObject);
  return outcome.denial === undefined ? undefined : denialStatus(outcome.denial).message;
}

describe('DeviceTaintRuleSafety: omitted selector (kubernetes/kubernetes#141620)', () => {
  for (const effect of ['NoSchedule', 'NoExecute']) {
    it(`an omitted deviceSelector with ${effect} is refused, naming the scheduler bug`, () => {
      const outcome = decide('CREATE', rule({ effect }));
      assert.ok(outcome.denial?.reason === 'Forbidden');
      const status = denialStatus(outcome.denial);
      assert.equal(status.code, 403);
      assert.match(status.message, /^devicetaintrules\.resource\.k8s\.io "drain-gpu-0" is forbidden: spec\.deviceSelector is omitted/);
      assert.match(status.message, /kubernetes\/kubernetes#141620/);
      assert.deepEqual(outcome.auditAnnotations, { 'device-taint-rule-safety': 'omitted-selector' });
    });
  }
  it('a null deviceSelector is an omitted one', () => {
    assert.match(refusal('CREATE', rule({ selector: null, effect: 'NoSchedule' })) ?? '', /is omitted/);
  });
  it('an omitted deviceSelector with None is harmless and admitted', () => {
    assert.deepEqual(decide('CREATE', rule({ effect: 'None' })), {});
  });
});

describe('DeviceTaintRuleSafety: empty selector (kubernetes/kubernetes#141422)', () => {
  it('deviceSelector: {} with NoSchedule is refused: it stops allocation of every device', () => {
    assert.match(refusal('CREATE', rule({ selector: {}, effect: 'NoSchedule' })) ?? '', /is empty with effect NoSchedule/);
  });
  it('deviceSelector with only null fields is empty too', () => {
    assert.match(refusal('CREATE', rule({ selector: { driver: null }, effect: 'NoSchedule' })) ?? '', /is empty/);
  });
  it('deviceSelector: {} with NoExecute is refused for the empty selector first, naming the issue', () => {
    assert.match(refusal('CREATE', rule({ selector: {}, effect: 'NoExecute' })) ?? '', /deletes every pod.*#141422/);
  });
  it(`deviceSelector: {} with NoSchedule and ${selectAllDevicesAnnotation}: "true" is admitted`, () => {
    assert.equal(
      refusal('CREATE', rule({ selector: {}, effect: 'NoSchedule', annotations: { [selectAllDevicesAnnotation]: 'true' } })),
      undefined,
    );
  });
  it('deviceSelector: {} with None is the dry run of every device, admitted', () => {
    assert.equal(refusal('CREATE', rule({ selector: {}, effect: 'None' })), undefined);
  });
});

describe('DeviceTaintRuleSafety: NoExecute needs a None dry run of the same devices first', () => {
  it('a CREATE with NoExecute is refused', () => {
    const outcome = decide('CREATE', rule({ selector: gpu0, effect: 'NoExecute' }));
    assert.ok(outcome.denial?.reason === 'Forbidden');
    assert.match(outcome.denial.message, /created with effect NoExecute without a dry run: create the rule with effect None first/);
    assert.deepEqual(outcome.auditAnnotations, { 'device-taint-rule-safety': 'no-dry-run' });
  });
  it(`a CREATE with NoExecute and ${skipDryRunAnnotation} is admitted (break glass)`, () => {
    assert.equal(
      refusal('CREATE', rule({ selector: gpu0, effect: 'NoExecute', annotations: { [skipDryRunAnnotation]: 'GPU on fire, INC-42' } })),
      undefined,
    );
  });
  it('an empty skip-dry-run annotation gives no reason and skips nothing', () => {
    assert.ok(refusal('CREATE', rule({ selector: gpu0, effect: 'NoExecute', annotations: { [skipDryRunAnnotation]: '' } })));
  });
  it('None → NoExecute after the controller simulated the stored generation is admitted', () => {
    const stored = rule({ selector: gpu0, effect: 'None', generation: 1, simulatedGeneration: 1 });
    assert.equal(refusal('UPDATE', rule({ selector: gpu0, effect: 'NoExecute', generation: 1 }), stored), undefined);
  });
  it('None → NoExecute before the controller simulated the stored generation is refused', () => {
    const stored = rule({ selector: gpu0, effect: 'None', generation: 2, simulatedGeneration: 1 });
    assert.match(refusal('UPDATE', rule({ selector: gpu0, effect: 'NoExecute' }), stored) ?? '', /has not yet written its simulation/);
    const unsimulated = rule({ selector: gpu0, effect: 'None', generation: 1 });
    assert.match(refusal('UPDATE', rule({ selector: gpu0, effect: 'NoExecute' }), unsimulated) ?? '', /has not yet written/);
  });
  it('None → NoExecute that widens the selector in the same update is refused', () => {
    const stored = rule({ selector: gpu0, effect: 'None', generation: 1, simulatedGeneration: 1 });
    const wider = rule({ selector: { driver: 'gpu.example.com' }, effect: 'NoExecute' });
    assert.match(refusal('UPDATE', wider, stored) ?? '', /changes the deviceSelector or the taint key/);
  });
  it('None → NoExecute that changes the taint key in the same update is refused', () => {
    const stored = rule({ selector: gpu0, effect: 'None', generation: 1, simulatedGeneration: 1 });
    assert.ok(refusal('UPDATE', rule({ selector: gpu0, effect: 'NoExecute', key: 'example.com/other' }), stored));
  });
  it('NoSchedule → NoExecute is refused: NoSchedule simulates no eviction', () => {
    const stored = rule({ selector: gpu0, effect: 'NoSchedule', generation: 1, simulatedGeneration: 1 });
    assert.match(refusal('UPDATE', rule({ selector: gpu0, effect: 'NoExecute' }), stored) ?? '', /has effect "NoSchedule", not None/);
  });
  it('an UPDATE of a NoExecute rule that keeps its devices and taint (a label, an annotation) is admitted', () => {
    const stored = rule({ selector: gpu0, effect: 'NoExecute', generation: 1 });
    assert.equal(refusal('UPDATE', rule({ selector: gpu0, effect: 'NoExecute', annotations: { owner: 'ops' } }), stored), undefined);
  });
  it('an UPDATE of a NoExecute rule that widens its selector is refused', () => {
    const stored = rule({ selector: gpu0, effect: 'NoExecute', generation: 1 });
    assert.ok(refusal('UPDATE', rule({ selector: { driver: 'gpu.example.com', pool: 'worker-0' }, effect: 'NoExecute' }), stored));
  });
  it('NoSchedule and None rules that name their devices are admitted without a dry run', () => {
    assert.equal(refusal('CREATE', rule({ selector: gpu0, effect: 'NoSchedule' })), undefined);
    assert.equal(refusal('CREATE', rule({ selector: gpu0, effect: 'None' })), undefined);
  });
});

describe('DeviceTaintRuleSafety: warn instead of deny, and warnings', () => {
  it('--device-taint-rule-safety warn admits the unsafe rule with a warning and the audit annotation', () => {
    const outcome = decide('CREATE', rule({ selector: {}, effect: 'NoExecute' }), undefined, 'Warn');
    assert.equal(outcome.denial, undefined);
    assert.equal(outcome.warnings?.length, 1);
    assert.match(outcome.warnings[0]!, /^DeviceTaintRule "drain-gpu-0": spec\.deviceSelector is empty/);
    assert.deepEqual(outcome.auditAnnotations, { 'device-taint-rule-safety': 'empty-selector' });
  });
  it('a selector with a pool but no driver is admitted with a warning', () => {
    const outcome = decide('CREATE', rule({ selector: { pool: 'worker-0' }, effect: 'NoSchedule' }));
    assert.equal(outcome.denial, undefined);
    assert.match(outcome.warnings?.[0] ?? '', /names a pool or device but no driver/);
  });
  it('status updates, DELETE and other resources are not handled', () => {
    const plugin = createDeviceTaintRuleSafety();
    const object = rule({ effect: 'NoExecute' });
    assert.equal(plugin.handles(admissionAttributes(rules, 'UPDATE', object, { subResource: 'status' })), false);
    assert.equal(plugin.handles(admissionAttributes(rules, 'DELETE', object)), false);
    assert.equal(plugin.handles(admissionAttributes({ ...rules, resource: 'resourceslices' }, 'CREATE', object)), false);
  });
  it('hostile shapes (a string selector, a taint that is a list) are judged without a crash', () => {
    for (const spec of [{ deviceSelector: 'all', taint: { effect: 'NoExecute' } }, { taint: [] }, {}]) {
      const plugin = createDeviceTaintRuleSafety();
      const object: JsonObject = { metadata: { name: 'x' }, spec };
      const outcome = plugin.validate(object, admissionAttributes(rules, 'CREATE', object));
      assert.ok(outcome.denial === undefined || outcome.denial.reason === 'Forbidden');
    }
  });
});
