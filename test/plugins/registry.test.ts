import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import { allPluginNames, buildPlugins } from '../../src/plugins/registry.js';
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
      ['DaemonSetTolerations', 'DefaultTolerationSeconds', 'PodTolerationRestriction', 'DedicatedNodes'],
    );
    assert.deepEqual(
      built.validating.map((plugin) => plugin.name),
      ['PodTolerationRestriction', 'DedicatedNodes', 'TolerationValidation', 'SchedulingWarnings'],
    );
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
