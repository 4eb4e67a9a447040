/**
 * Fuzzing the HTTP layer with damaged copies of the captured fixture reviews: a field deleted, its
 * JSON type changed, replaced by a random JSON value, an array doubled, a value buried under deep
 * nesting, or the text cut short. Whatever arrives, the answer is a 200 AdmissionReview carrying
 * the request's uid (with a patch that applies to the object sent), or a 4xx JSON Status — never a
 * 5xx, a crash or a hang. 1,500 cases with a fixed seed.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import request from 'supertest';
import { appFromArgs, loadReviewFixtures } from '../support/harness.js';

const fixtures = loadReviewFixtures();
const servers = new Map<string, Server>();

/** One listening server per distinct flag set, so the 1,500 requests reuse a few sockets' worth of setup. */
function serverFor(args: readonly string[]): Server {
  const key = JSON.stringify(args);
  let server = servers.get(key);
  if (server === undefined) {
    server = createServer(appFromArgs(args)).listen(0, '127.0.0.1');
    servers.set(key, server);
  }
  return server;
}

type Damage = 'delete' | 'retype' | 'replace' | 'duplicate-array' | 'nest' | 'truncate';

interface Case {
  readonly fixture: number;
  readonly damage: Damage;
  /** The path into the review, each step an index into the keys of the current value. */
  readonly steps: readonly number[];
  readonly value: unknown;
  readonly amount: number;
  readonly side: 'mutate' | 'validate';
}

const caseArbitrary: fc.Arbitrary<Case> = fc.record({
  fixture: fc.nat(),
  damage: fc.constantFrom<Damage>('delete', 'retype', 'replace', 'duplicate-array', 'nest', 'truncate'),
  // Biased towards request.object: most steps of a real review lead there.
  steps: fc.array(fc.nat(), { minLength: 1, maxLength: 9 }),
  value: fc.jsonValue({ maxDepth: 3 }),
  amount: fc.nat(),
  side: fc.constantFrom('mutate' as const, 'validate' as const),
});

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

function childKeys(container: Container): string[] {
  return Array.isArray(container) ? container.map((_, i) => String(i)) : Object.keys(container);
}

function retyped(value: unknown): unknown {
  if (typeof value === 'string') return value.length;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 0;
  if (Array.isArray(value)) return Object.fromEntries(value.entries());
  if (value === null) return 0;
  return Object.values(value as object);
}

/** Applies the damage to a fresh copy of the fixture review and returns the body text. */
function damagedBody(c: Case): string {
  const fixture = fixtures[c.fixture % fixtures.length]!;
  const review = structuredClone(fixture.review) as Record<string, unknown>;
  if (c.damage === 'truncate') {
    const text = JSON.stringify(review);
    return text.slice(0, c.amount % text.length);
  }
  let parent: Container = review;
  let key = 'request';
  let lastArray: unknown[] | undefined;
  for (const step of c.steps) {
    const current: unknown = (parent as Record<string, unknown>)[key];
    if (Array.isArray(current)) lastArray = current;
    if (!isContainer(current)) break;
    const keys = childKeys(current);
    if (keys.length === 0) break;
    parent = current;
    key = keys[step % keys.length]!;
  }
  const target = parent as Record<string, unknown>;
  switch (c.damage) {
    case 'delete':
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else Reflect.deleteProperty(target, key);
      break;
    case 'retype':
      target[key] = retyped(target[key]);
      break;
    case 'replace':
      target[key] = c.value;
      break;
    case 'duplicate-array': {
      const array = Array.isArray(target[key]) ? (target[key] as unknown[]) : (lastArray ?? (Array.isArray(parent) ? parent : undefined));
      if (array !== undefined) array.push(...structuredClone(array));
      break;
    }
    case 'nest': {
      // Up to 700 levels: some stay under the 512-level limit, some go over it.
      let nested: unknown = target[key];
      for (let i = c.amount % 700; i > 0; i--) nested = i % 2 === 0 ? [nested] : { v: nested };
      target[key] = nested;
      break;
    }
  }
  return JSON.stringify(review);
}

interface WireReview {
  apiVersion?: string;
  kind?: string;
  response?: { uid?: unknown; allowed?: unknown; patch?: string; patchType?: string };
}

describe('fuzzed fixture reviews', () => {
  before(() => {
    for (const fixture of fixtures) serverFor(fixture.args);
  });
  after(async () => {
    await Promise.all([...servers.values()].map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('are each answered with a 200 AdmissionReview for their uid or a 4xx JSON Status, never a 5xx', async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async (c) => {
        const fixture = fixtures[c.fixture % fixtures.length]!;
        const body = damagedBody(c);
        const res = await request(serverFor(fixture.args))
          .post(`/${c.side}`)
          .set('Content-Type', 'application/json')
          .serialize((text: unknown) => text as string)
          .send(body);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        assert.ok(res.status < 500, `HTTP ${res.status}: ${res.text.slice(0, 300)}`);
        assert.match(res.headers['content-type'] ?? '', /^application\/json/);
        if (res.status === 200) {
          const sent = JSON.parse(body) as { request: { uid: string; object?: unknown } };
          const answer = res.body as WireReview;
          assert.equal(answer.kind, 'AdmissionReview');
          assert.equal(answer.apiVersion, 'admission.k8s.io/v1');
          const response = answer.response;
          assert.ok(response !== undefined, 'a response');
          assert.equal(response.uid, sent.request.uid, 'the uid is the request’s');
          assert.equal(typeof response.allowed, 'boolean');
          if (response.patch !== undefined) {
            assert.equal(response.patchType, 'JSONPatch');
            const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as jsonpatch.Operation[];
            jsonpatch.applyPatch(structuredClone(sent.request.object), ops, true, true);
          }
        } else {
          assert.ok(res.status >= 400, `HTTP ${res.status}`);
          const status = JSON.parse(res.text) as { kind: string; status: string; code: number; message: string };
          assert.equal(status.kind, 'Status');
          assert.equal(status.status, 'Failure');
          assert.equal(status.code, res.status);
          assert.ok(status.message.length > 0);
        }
      }),
      { numRuns: 1500, seed: 0xf022 },
    );
    // The damage must reach both outcomes, or the fuzzer tests nothing.
    assert.ok((statuses.get(200) ?? 0) > 100, `200s: ${statuses.get(200) ?? 0}`);
    assert.ok((statuses.get(400) ?? 0) > 100, `400s: ${statuses.get(400) ?? 0}`);
  });
});
