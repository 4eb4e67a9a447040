/**
 * Every golden patch applied by the JSON Patch library kube-apiserver itself uses
 * (evanphx/json-patch, through `kubectl patch --local`), and compared with fast-json-patch's
 * result: two independent RFC 6902 implementations must agree on every patch tolerator sends.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import jsonpatch from 'fast-json-patch';
import { fixturesDir, loadReviewFixtures } from '../support/harness.js';

function kubectlAvailable(): boolean {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const available = kubectlAvailable();

function withoutManagedFields(object: unknown): unknown {
  const copy = structuredClone(object) as { metadata?: { managedFields?: unknown } };
  delete copy.metadata?.managedFields;
  return copy;
}

describe(
  "patches applied by kube-apiserver's JSON Patch library",
  { skip: available ? false : 'kubectl is not installed on this machine' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-kubectl-'));
    after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const patched = loadReviewFixtures().flatMap((fixture) => {
      const golden = JSON.parse(readFileSync(join(fixturesDir, 'golden', `${fixture.name}.json`), 'utf8')) as {
        response: { patch?: string };
      };
      return golden.response.patch === undefined ? [] : [{ fixture, patch: Buffer.from(golden.response.patch, 'base64').toString('utf8') }];
    });

    it('there are patches to check', () => {
      assert.ok(patched.length >= 15, `only ${patched.length} patches`);
    });

    for (const { fixture, patch } of patched) {
      it(`${fixture.name}: kubectl and fast-json-patch agree`, () => {
        const object = fixture.review.request.object as Record<string, unknown>;
        const file = join(dir, `${fixture.name}.json`);
        writeFileSync(file, JSON.stringify(object));
        const byKubectl = JSON.parse(
          execFileSync('kubectl', ['patch', '--local', '-f', file, '--type=json', '-p', patch, '-o', 'json'], { encoding: 'utf8' }),
        ) as unknown;
        const byLibrary = jsonpatch.applyPatch(
          structuredClone(object),
          JSON.parse(patch) as jsonpatch.Operation[],
          true,
          false,
        ).newDocument;
        // kubectl's printer drops managedFields; nothing in any patch touches them.
        assert.deepEqual(withoutManagedFields(byKubectl), withoutManagedFields(byLibrary));
      });
    }
  },
);
