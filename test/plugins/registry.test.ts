import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import { allPluginNames, apiServerValidationPlugins, buildPlugins, defaultOffPlugins, selectPlugins } from '../../src/plugins/registry.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';

describe('the plugin registry, the one list of plugins', () => {
  const built = buildPlugins({
    enabled: allPluginNames,
    defaultTolerationSeconds: { notReadySeconds: 300, unreachableSeconds: 300 },
    podTolerationRestriction: { default: [], whitelist: [] },
    dedicatedNodes: createDedicatedNodes(() => emptyPolicySet),
  });

  it('builds every plugin it names, each under its own name, in admission order', () => {
    const names = [...new Set([...built.mutating, ...built.validating].map((plugin) => plugin.name))];
    assert.deepEqual(
      allPluginNames.filter((name) => names.includes(name)),
      [...allPluginNames],
    );
    assert.deepEqual(
      built.mutating.map((plugin) => plugin.name),
      [
        'DaemonSetTolerations',
        'PodNodeSelector',
        'DefaultTolerationSeconds',
        'PodTolerationRestriction',
        'ExtendedResourceToleration',
        'DedicatedNodes',
        'DeviceTolerationRestriction',
      ],
    );
    assert.deepEqual(
      built.validating.map((plugin) => plugin.name),
      [
        'TolerationValidation',
        'DeviceTolerationValidation',
        'PodNodeSelector',
        'PodTolerationRestriction',
        'DedicatedNodes',
        'DeviceTolerationRestriction',
        'DeviceTaintRuleSafety',
        'SchedulingWarnings',
      ],
    );
  });

  it("the API server's own validation runs first on the validating side: after every mutating plugin, before every validating one, as kube-apiserver's store runs BeforeCreate before createValidation", () => {
    const validating = built.validating.map((plugin) => plugin.name);
    assert.deepEqual(validating.slice(0, apiServerValidationPlugins.length), [...apiServerValidationPlugins]);
    assert.deepEqual(apiServerValidationPlugins, ['TolerationValidation', 'DeviceTolerationValidation']);
  });

  it("PodNodeSelector runs where kube-apiserver's AllOrderedPlugins puts it: before DefaultTolerationSeconds and PodTolerationRestriction, after the DaemonSet controller's tolerations", () => {
    const order = built.mutating.map((plugin) => plugin.name);
    assert.ok(order.indexOf('DaemonSetTolerations') < order.indexOf('PodNodeSelector'));
    assert.ok(order.indexOf('PodNodeSelector') < order.indexOf('DefaultTolerationSeconds'));
    assert.ok(order.indexOf('DefaultTolerationSeconds') < order.indexOf('PodTolerationRestriction'));
    // The validating side (SchedulingWarnings last) sees the nodeSelector PodNodeSelector merged;
    // its validating part is the first admission plugin, after the API server's own validation.
    const validating = built.validating.map((plugin) => plugin.name);
    assert.equal(validating.indexOf('PodNodeSelector'), apiServerValidationPlugins.length);
    assert.equal(validating.at(-1), 'SchedulingWarnings');
  });

  it("ExtendedResourceToleration runs where kube-apiserver's AllOrderedPlugins puts it: after PodTolerationRestriction, before tenancy and validation", () => {
    const order = built.mutating.map((plugin) => plugin.name);
    assert.equal(order.indexOf('ExtendedResourceToleration'), order.indexOf('PodTolerationRestriction') + 1);
    assert.ok(order.indexOf('ExtendedResourceToleration') < order.indexOf('DedicatedNodes'));
  });

  it('ExtendedResourceToleration is off by default, as upstream: only --enable-plugins turns it on', () => {
    assert.ok(!selectPlugins([], []).includes('ExtendedResourceToleration'));
    assert.ok(selectPlugins(['ExtendedResourceToleration'], []).includes('ExtendedResourceToleration'));
    assert.ok(defaultOffPlugins.includes('ExtendedResourceToleration'));
  });

  it('leaves out what is not enabled', () => {
    const some = buildPlugins({
      enabled: ['TolerationValidation'],
      defaultTolerationSeconds: { notReadySeconds: 300, unreachableSeconds: 300 },
      podTolerationRestriction: { default: [], whitelist: [] },
    });
    assert.deepEqual(some.mutating, []);
    assert.deepEqual(
      some.validating.map((plugin) => plugin.name),
      ['TolerationValidation'],
    );
  });
});
