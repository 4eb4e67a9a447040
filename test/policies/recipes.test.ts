/**
 * The tenant-identity recipes under policies/recipes/ (docs/tenancy.md#recipes-tenant-identities-that-already-exist):
 * each recipe's `tolerator test` cases pass, and each recipe loads on its own, with no caution,
 * since each decides the group from what the tool that owns the identity writes on the Namespace
 * (never the pod's own labels, never the namespace's name). The shipped `--policies policies`
 * set is unchanged: policies/ reads no subdirectory.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { testCommand } from '../../src/cli/policy-test.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { runCommand } from '../support/command-io.js';

const root = join(import.meta.dirname, '..', '..');
const recipes = join(root, 'policies', 'recipes');

describe('policy recipes: tenant identities that already exist (Capsule, Rancher, vcluster)', () => {
  for (const [recipe, cases] of [
    ['capsule', 5],
    ['rancher', 5],
    ['vcluster', 3],
  ] as const) {
    it(`the ${recipe} recipe's tolerator test cases pass`, async () => {
      const { code, stdout } = await runCommand(testCommand, [join(recipes, recipe, 'tests')]);
      assert.equal(code, 0, stdout);
      assert.match(stdout, new RegExp(`\\n${cases} passed, 0 failed, ${cases} cases\\n$`));
    });

    it(`the ${recipe} recipe loads alone, without a caution`, () => {
      const loaded = loadPolicyDirectory(join(recipes, recipe));
      assert.deepEqual(loaded.errors, []);
      assert.equal(loaded.set.policies.length, 1);
      assert.deepEqual(loaded.set.policies[0]?.cautions, []);
    });
  }

  it('the shipped policy set is unchanged by the recipes (policies/ reads no subdirectory)', () => {
    const loaded = loadPolicyDirectory(join(root, 'policies'));
    assert.deepEqual(
      loaded.set.policies.map(({ name }) => name),
      ['dedicated-by-namespace-label', 'dedicated-by-namespace-prefix'],
    );
    assert.deepEqual(readdirSync(recipes).sort(), ['capsule', 'rancher', 'vcluster']);
  });
});
