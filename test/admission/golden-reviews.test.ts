/**
 * Every captured-shape AdmissionReview in test/fixtures/reviews through the HTTP layer, compared
 * with its golden response byte for byte (as JSON), and checked by meaning too: the patch is
 * applied with an independent RFC 6902 implementation and the resulting tolerations compared
 * with the fixture's hand-written expectation; a mutated pod must then pass validation.
 *
 * UPDATE_GOLDEN=1 rewrites the golden files (review the diff before committing it).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import jsonpatch from 'fast-json-patch';
import request from 'supertest';
import { appFromArgs, fixturesDir, loadReviewFixtures } from '../support/harness.js';

interface WireResponse {
  apiVersion: string;
  kind: string;
  response: {
    uid: string;
    allowed: boolean;
    patchType?: string;
    patch?: string;
    status?: { code: number; message: string };
  };
}

function decodePatch(patch: string): jsonpatch.Operation[] {
  return JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as jsonpatch.Operation[];
}

describe('golden AdmissionReview responses', () => {
  const fixtures = loadReviewFixtures();

  it('has at least 25 fixtures covering both webhooks and both operations', () => {
    assert.ok(fixtures.length >= 25, `only ${fixtures.length} fixtures`);
    for (const webhook of ['mutate', 'validate']) {
      assert.ok(
        fixtures.some((fixture) => fixture.webhook === webhook),
        webhook,
      );
    }
    for (const operation of ['CREATE', 'UPDATE']) {
      assert.ok(
        fixtures.some((fixture) => fixture.review.request.operation === operation),
        operation,
      );
    }
  });

  for (const fixture of fixtures) {
    it(fixture.description, async () => {
      const app = appFromArgs(fixture.args);
      const res = await request(app)
        .post(`/${fixture.webhook}`)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(fixture.review));
      assert.equal(res.status, 200);
      const body = res.body as WireResponse;

      const goldenFile = join(fixturesDir, 'golden', `${fixture.name}.json`);
      if (process.env.UPDATE_GOLDEN === '1') {
        writeFileSync(goldenFile, `${JSON.stringify(body, null, 2)}\n`);
      }
      assert.ok(existsSync(goldenFile), `no golden file for ${fixture.name}; run with UPDATE_GOLDEN=1 and review it`);
      assert.deepEqual(body, JSON.parse(readFileSync(goldenFile, 'utf8')));

      assert.equal(body.apiVersion, 'admission.k8s.io/v1');
      assert.equal(body.kind, 'AdmissionReview');
      assert.equal(body.response.uid, fixture.review.request.uid, 'uid is echoed');
      assert.equal(body.response.allowed, fixture.expect.allowed);
      if (!fixture.expect.allowed) {
        assert.equal(body.response.status?.code, fixture.expect.code);
        if (fixture.expect.message !== undefined) {
          assert.equal(body.response.status?.message, fixture.expect.message);
        }
        assert.equal(body.response.patch, undefined, 'a denial carries no patch');
        return;
      }
      if (fixture.expect.patched === false) {
        assert.equal(body.response.patch, undefined, 'no patch');
        assert.equal(body.response.patchType, undefined, 'no patchType without a patch');
      }
      if (fixture.expect.tolerations !== undefined || fixture.expect.nodeSelector !== undefined) {
        const original = fixture.review.request.object as Record<string, unknown>;
        let patched = original;
        if (body.response.patch !== undefined) {
          assert.equal(body.response.patchType, 'JSONPatch');
          patched = jsonpatch.applyPatch(structuredClone(original), decodePatch(body.response.patch), true, false).newDocument;
        }
        // The pod spec: the object's own, or a DaemonSet's template's.
        const specOf = (object: Record<string, unknown>): Record<string, unknown> => {
          const spec = object.spec as Record<string, unknown>;
          return object.kind === 'DaemonSet' ? ((spec.template as Record<string, unknown>).spec as Record<string, unknown>) : spec;
        };
        const expected: [string, unknown][] = [['affinity', fixture.expect.affinity ?? specOf(original).affinity]];
        if (fixture.expect.tolerations !== undefined) expected.push(['tolerations', fixture.expect.tolerations]);
        if (fixture.expect.nodeSelector !== undefined) expected.push(['nodeSelector', fixture.expect.nodeSelector]);
        for (const [field, value] of expected) {
          assert.deepEqual(specOf(patched)[field], value, field);
        }
        // Apart from those fields (the node affinity changes only for a tenant) the patch touches nothing.
        const rest = (object: Record<string, unknown>): unknown => {
          const copy = structuredClone(object);
          for (const [field] of expected) Reflect.deleteProperty(specOf(copy), field);
          return copy;
        };
        assert.deepEqual(rest(patched), rest(original));

        if (fixture.webhook === 'mutate') {
          const validated = structuredClone(fixture.review);
          validated.request.object = patched;
          const again = await request(app).post('/validate').set('Content-Type', 'application/json').send(JSON.stringify(validated));
          assert.equal((again.body as WireResponse).response.allowed, true, 'the mutated pod passes validation');
          const second = await request(app).post('/mutate').set('Content-Type', 'application/json').send(JSON.stringify(validated));
          assert.equal((second.body as WireResponse).response.patch, undefined, 'a second review of the mutated pod yields no patch');
        }
      }
    });
  }
});
