/**
 * Every golden patch applied by the JSON Patch library kube-apiserver itself uses
 * (gopkg.in/evanphx/json-patch.v4, through `kubectl patch --local`), and compared with
 * fast-json-patch's result: two independent RFC 6902 implementations must agree on every patch
 * tolerator sends. Then the patches of pods built to make the diff long (test/support/
 * patch-shapes.ts), at n and 4n: the library must turn the object into the mutated one, from a
 * patch that stays within the operation bound (the work it costs is counted in
 * test/admission/json-patch-diff.test.ts, with a model of the same library).
 *
 * kubectl is found by findKubectl (test/cluster/binaries.ts): the PATH's, else the control plane
 * build's; without either the suite is skipped.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import jsonpatch from 'fast-json-patch';
import { diffJson, maxPatchOperations, type JsonPatchOperation } from '../../src/admission/json-patch-diff.js';
import { findKubectl } from '../cluster/binaries.js';
import { fixturesDir, loadReviewFixtures } from '../support/harness.js';
import { mutatingPatch, patchShapes } from '../support/patch-shapes.js';

const kubectl = findKubectl();

function withoutManagedFields(object: unknown): unknown {
  const copy = structuredClone(object) as { metadata?: { managedFields?: unknown } };
  delete copy.metadata?.managedFields;
  return copy;
}

describe("patches applied by kube-apiserver's JSON Patch library", { skip: kubectl === undefined ? 'no kubectl found' : false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-kubectl-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** `kubectl patch --local` of `object` with `patch` (from a file: a patch can be longer than an argument may be). */
  function applyWithKubectl(name: string, object: unknown, patch: readonly JsonPatchOperation[] | string): unknown {
    const file = join(dir, `${name}.json`);
    const patchFile = join(dir, `${name}.patch.json`);
    writeFileSync(file, JSON.stringify(object));
    writeFileSync(patchFile, typeof patch === 'string' ? patch : JSON.stringify(patch));
    const output = execFileSync(
      kubectl?.path ?? 'kubectl',
      ['patch', '--local', '-f', file, '--type=json', '--patch-file', patchFile, '-o', 'json'],
      { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
    );
    return JSON.parse(output) as unknown;
  }

  const patched = loadReviewFixtures().flatMap((fixture) => {
    const golden = JSON.parse(readFileSync(join(fixturesDir, 'golden', `${fixture.name}.json`), 'utf8')) as {
      response: { patch?: string };
    };
    return golden.response.patch === undefined ? [] : [{ fixture, patch: Buffer.from(golden.response.patch, 'base64').toString('utf8') }];
  });

  it('there are patches to check', (t) => {
    t.diagnostic(`kubectl: ${kubectl?.path} (${kubectl?.source})`);
    assert.ok(patched.length >= 15, `only ${patched.length} patches`);
  });

  for (const { fixture, patch } of patched) {
    it(`${fixture.name}: kubectl and fast-json-patch agree`, () => {
      const object = fixture.review.request.object as Record<string, unknown>;
      const byKubectl = applyWithKubectl(fixture.name, object, patch);
      const byLibrary = jsonpatch.applyPatch(structuredClone(object), JSON.parse(patch) as jsonpatch.Operation[], true, false).newDocument;
      // kubectl's printer drops managedFields; nothing in any patch touches them.
      assert.deepEqual(withoutManagedFields(byKubectl), withoutManagedFields(byLibrary));
    });
  }

  describe('a patch that is quadratic for the API server to apply', () => {
    const n = 2_000;
    for (const shape of patchShapes) {
      for (const size of [n, 4 * n]) {
        it(`${shape.name}, n = ${size}: the library turns the object into the mutated one, from at most ${maxPatchOperations} operations`, async () => {
          const { object, patch } = await mutatingPatch(shape, size);
          assert.ok(patch.length <= maxPatchOperations, `${patch.length} operations`);
          const byKubectl = applyWithKubectl(`shape-${size}`, object, patch);
          assert.deepEqual(withoutManagedFields(byKubectl), withoutManagedFields(shape.expected(object, size)));
        });
      }
    }

    it('on UPDATE, tolerations appended to a long list: the replaced list keeps the old ones first and unchanged', () => {
      const old = Array.from({ length: 4 * n }, (_, i) => ({
        key: `k${i}`,
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: i,
      }));
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: 'ns' },
        spec: { containers: [{ name: 'c', image: 'i' }], tolerations: old },
      };
      const added = Array.from({ length: 20 }, (_, i) => ({ key: `added-${i}`, operator: 'Exists' }));
      const changed = { ...pod, spec: { ...pod.spec, tolerations: [...old, ...added] } };
      const byKubectl = applyWithKubectl('update', pod, diffJson(pod, changed)) as typeof changed;
      assert.deepEqual(byKubectl, changed);
    });
  });
});
