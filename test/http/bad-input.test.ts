/**
 * What arrives on the port that is not a well-formed review: every body gets a precise 4xx with
 * a JSON Status saying what was wrong, never a 5xx, a crash or a hang, and the server keeps
 * answering afterwards.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import request from 'supertest';
import { maxBodyBytes } from '../../src/admission/body-limits.js';
import { appFromArgs, loadReviewFixture } from '../support/harness.js';

const app = appFromArgs([]);

function validReview(): Record<string, unknown> & { request: Record<string, unknown> } {
  return loadReviewFixture('burstable-create-defaults-present').review;
}

function withRequest(change: (request: Record<string, unknown>) => void): string {
  const review = validReview();
  change(review.request);
  return JSON.stringify(review);
}

function withObject(change: (pod: { metadata: Record<string, unknown>; spec: Record<string, unknown> }) => void): string {
  return withRequest((request) => {
    change(request.object as { metadata: Record<string, unknown>; spec: Record<string, unknown> });
  });
}

interface Row {
  readonly name: string;
  readonly body: string | Buffer;
  readonly contentType?: string;
  readonly status: number;
  readonly message: RegExp;
}

const rows: Row[] = [
  { name: 'an empty body', body: '', status: 400, message: /request body is empty/ },
  { name: 'whitespace only', body: '  \n', status: 400, message: /request body is empty/ },
  { name: 'truncated JSON', body: validReviewText().slice(0, 200), status: 400, message: /not valid JSON/ },
  { name: 'a JSON syntax error', body: '{"apiVersion": admission}', status: 400, message: /not valid JSON/ },
  { name: 'a JSON array', body: '[]', status: 400, message: /must be a JSON object/ },
  { name: 'a JSON string', body: '"AdmissionReview"', status: 400, message: /must be a JSON object/ },
  { name: 'JSON null', body: 'null', status: 400, message: /must be a JSON object/ },
  {
    name: 'the wrong kind',
    body: JSON.stringify({ ...validReview(), kind: 'Pod' }),
    status: 400,
    message: /kind must be "AdmissionReview", got "Pod"/,
  },
  {
    name: 'no kind',
    body: JSON.stringify({ ...validReview(), kind: undefined }),
    status: 400,
    message: /kind must be "AdmissionReview", got nothing/,
  },
  {
    name: 'the v1beta1 version',
    body: JSON.stringify({ ...validReview(), apiVersion: 'admission.k8s.io/v1beta1' }),
    status: 400,
    message: /apiVersion "admission.k8s.io\/v1beta1" is not supported/,
  },
  { name: 'no request', body: JSON.stringify({ ...validReview(), request: undefined }), status: 400, message: /request is required/ },
  {
    name: 'a request that is a string',
    body: JSON.stringify({ ...validReview(), request: 'x' }),
    status: 400,
    message: /request is required and must be an object/,
  },
  { name: 'no uid', body: withRequest((r) => delete r.uid), status: 400, message: /request\.uid is required/ },
  { name: 'an empty uid', body: withRequest((r) => (r.uid = '')), status: 400, message: /request\.uid must not be empty/ },
  { name: 'a numeric uid', body: withRequest((r) => (r.uid = 42)), status: 400, message: /request\.uid: expected string, got number/ },
  { name: 'no operation', body: withRequest((r) => delete r.operation), status: 400, message: /request\.operation is required/ },
  {
    name: 'an unknown operation',
    body: withRequest((r) => (r.operation = 'PATCH')),
    status: 400,
    message: /request\.operation: unsupported value "PATCH"/,
  },
  { name: 'no kind in the request', body: withRequest((r) => delete r.kind), status: 400, message: /request\.kind is required/ },
  {
    name: 'a kind that is an array',
    body: withRequest((r) => (r.kind = [])),
    status: 400,
    message: /request\.kind: expected object, got array/,
  },
  { name: 'no resource', body: withRequest((r) => delete r.resource), status: 400, message: /request\.resource is required/ },
  {
    name: 'a CREATE with no object',
    body: withRequest((r) => delete r.object),
    status: 400,
    message: /request\.object is required for CREATE/,
  },
  {
    name: 'an object that is a string',
    body: withRequest((r) => (r.object = 'pod')),
    status: 400,
    message: /request\.object: expected object, got string/,
  },
  {
    name: 'an UPDATE with no oldObject',
    body: withRequest((r) => {
      r.operation = 'UPDATE';
    }),
    status: 400,
    message: /request\.oldObject is required for UPDATE/,
  },
  {
    name: 'dryRun as a string',
    body: withRequest((r) => (r.dryRun = 'true')),
    status: 400,
    message: /request\.dryRun: expected boolean, got string/,
  },
  {
    name: 'a namespace as a number',
    body: withRequest((r) => (r.namespace = 7)),
    status: 400,
    message: /request\.namespace: expected string, got number/,
  },
  {
    name: 'userInfo as a string',
    body: withRequest((r) => (r.userInfo = 'admin')),
    status: 400,
    message: /request\.userInfo: expected object, got string/,
  },
  {
    name: 'userInfo.groups as a string',
    body: withRequest((r) => (r.userInfo = { username: 'a', groups: 'system:masters' })),
    status: 400,
    message: /request\.userInfo\.groups: expected array, got string/,
  },
  {
    name: 'userInfo.groups holding a number',
    body: withRequest((r) => (r.userInfo = { username: 'a', groups: ['a', 1] })),
    status: 400,
    message: /request\.userInfo\.groups: expected an array of strings/,
  },
  {
    name: 'userInfo.extra values that are not lists',
    body: withRequest((r) => (r.userInfo = { username: 'a', extra: { scopes: 'x' } })),
    status: 400,
    message: /request\.userInfo\.extra\["scopes"\]: expected an array of strings/,
  },
  {
    name: 'userInfo.username as a number',
    body: withRequest((r) => (r.userInfo = { username: 5 })),
    status: 400,
    message: /request\.userInfo\.username: expected string, got number/,
  },
  {
    name: 'an object with no metadata',
    body: withObject((p) => delete (p as { metadata?: unknown }).metadata),
    status: 400,
    message: /request\.object\.metadata is required/,
  },
  {
    name: 'tolerations as an object',
    body: withObject((p) => (p.spec.tolerations = {})),
    status: 400,
    message: /request\.object\.spec\.tolerations: expected array, got object/,
  },
  {
    name: 'a toleration that is a string',
    body: withObject((p) => (p.spec.tolerations = ['x'])),
    status: 400,
    message: /spec\.tolerations\[0\]: expected object, got string/,
  },
  {
    name: 'a null toleration',
    body: withObject((p) => (p.spec.tolerations = [null])),
    status: 400,
    message: /spec\.tolerations\[0\]: expected object, got null/,
  },
  {
    name: 'a numeric toleration key',
    body: withObject((p) => (p.spec.tolerations = [{ key: 1, operator: 'Exists' }])),
    status: 400,
    message: /spec\.tolerations\[0\]\.key: expected string, got number/,
  },
  {
    name: 'tolerationSeconds as a string',
    body: withObject((p) => (p.spec.tolerations = [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: '300' }])),
    status: 400,
    message: /tolerationSeconds: expected integer, got string/,
  },
  {
    name: 'fractional tolerationSeconds',
    body: withObject((p) => (p.spec.tolerations = [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1.5 }])),
    status: 400,
    message: /tolerationSeconds: expected integer, got number/,
  },
  {
    name: 'containers as an object',
    body: withObject((p) => (p.spec.containers = {})),
    status: 400,
    message: /spec\.containers: expected array, got object/,
  },
  {
    name: 'a resource quantity that is an object',
    body: withObject((p) => (p.spec.containers = [{ name: 'a', resources: { requests: { cpu: {} } } }])),
    status: 400,
    message: /requests\["cpu"\]: expected quantity/,
  },
  {
    name: 'annotations as an array',
    body: withObject((p) => (p.metadata.annotations = [])),
    status: 400,
    message: /metadata\.annotations: expected object, got array/,
  },
  {
    name: 'an annotation value that is a number',
    body: withObject((p) => (p.metadata.annotations = { a: 1 })),
    status: 400,
    message: /metadata\.annotations\["a"\]: expected string, got number/,
  },
  {
    name: 'hostNetwork as a string',
    body: withObject((p) => (p.spec.hostNetwork = 'yes')),
    status: 400,
    message: /spec\.hostNetwork: expected boolean, got string/,
  },
  {
    name: 'ownerReferences as a string',
    body: withObject((p) => (p.metadata.ownerReferences = 'rs')),
    status: 400,
    message: /metadata\.ownerReferences: expected array, got string/,
  },
  { name: 'invalid UTF-8', body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), status: 400, message: /not valid UTF-8/ },
  {
    name: 'nesting 10,000 levels deep',
    body: '['.repeat(10_000) + ']'.repeat(10_000),
    status: 400,
    message: /nested deeper than 512 levels/,
  },
  {
    name: 'a text/plain content type',
    body: validReviewText(),
    contentType: 'text/plain',
    status: 415,
    message: /Content-Type must be application\/json/,
  },
  {
    name: 'an XML content type',
    body: '<AdmissionReview/>',
    contentType: 'application/xml',
    status: 415,
    message: /Content-Type must be application\/json/,
  },
  // Numbers beyond int64. kube-apiserver decodes every pod into Go types first (tolerationSeconds
  // is an int64, a preference weight an int32), so it never sends such a value; object-shape.ts
  // exists to refuse what it would not send, with the field named. JSON.parse gives 1e20 as an
  // integral double, so `Number.isInteger` alone lets it through.
  {
    name: 'tolerationSeconds of 1e20, beyond int64',
    body: withNumber(
      (p) => (p.spec.tolerations = [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1 }]),
      '"tolerationSeconds":1',
      '"tolerationSeconds":1e20',
    ),
    status: 400,
    message: /request\.object\.spec\.tolerations\[0\]\.tolerationSeconds: expected (integer|int64)/,
  },
  {
    // Not 2^63 itself: JSON.parse rounds the valid 2^63 - 1 to 2^63 too, so only values clearly
    // beyond the int64 range can be told apart from valid ones.
    name: 'tolerationSeconds of 10^19, past the int64 maximum of about 9.22e18',
    body: withNumber(
      (p) => (p.spec.tolerations = [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1 }]),
      '"tolerationSeconds":1',
      '"tolerationSeconds":10000000000000000000',
    ),
    status: 400,
    message: /tolerationSeconds: expected (integer|int64)/,
  },
  {
    name: 'tolerationSeconds of -1e20, below the int64 minimum',
    body: withNumber(
      (p) => (p.spec.tolerations = [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1 }]),
      '"tolerationSeconds":1',
      '"tolerationSeconds":-1e20',
    ),
    status: 400,
    message: /tolerationSeconds: expected (integer|int64)/,
  },
  {
    name: 'tolerationSeconds of 1e400, which JSON.parse makes Infinity',
    body: withNumber(
      (p) => (p.spec.tolerations = [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1 }]),
      '"tolerationSeconds":1',
      '"tolerationSeconds":1e400',
    ),
    status: 400,
    message: /tolerationSeconds: expected integer, got number/,
  },
  {
    name: 'an oldObject tolerationSeconds of 1e20 on UPDATE',
    body: withRequest((r) => {
      r.operation = 'UPDATE';
      r.oldObject = structuredClone(r.object);
      (r.oldObject as { spec: Record<string, unknown> }).spec.tolerations = [
        { key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 7 },
      ];
    }).replace('"tolerationSeconds":7', '"tolerationSeconds":1e20'),
    status: 400,
    message: /request\.oldObject\.spec\.tolerations\[0\]\.tolerationSeconds: expected (integer|int64)/,
  },
  {
    name: 'a preferred node-affinity weight of 1e20, beyond int32',
    body: withNumber(
      (p) => (p.spec.affinity = { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 7, preference: {} }] } }),
      '"weight":7',
      '"weight":1e20',
    ),
    status: 400,
    message: /preferredDuringSchedulingIgnoredDuringExecution\[0\]\.weight: expected (integer|int32)/,
  },
  {
    name: 'a cpu request of 1e400, which JSON.parse makes Infinity',
    body: withNumber((p) => (p.spec.containers = [{ name: 'a', resources: { requests: { cpu: 7 } } }]), '"cpu":7', '"cpu":1e400'),
    status: 400,
    message: /requests\["cpu"\]: expected quantity \(string or number\), got number/,
  },
  {
    name: 'a DaemonSet template tolerationSeconds of 1e20',
    body: withRequest((r) => {
      r.kind = { group: 'apps', version: 'v1', kind: 'DaemonSet' };
      r.resource = { group: 'apps', version: 'v1', resource: 'daemonsets' };
      r.object = {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'agent' },
        spec: { template: { spec: { tolerations: [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 7 }] } } },
      };
    }).replace('"tolerationSeconds":7', '"tolerationSeconds":1e20'),
    status: 400,
    message: /request\.object\.spec\.template\.spec\.tolerations\[0\]\.tolerationSeconds: expected (integer|int64)/,
  },
  {
    name: 'a qosClass that is a number',
    body: withRequest((r) => ((r.object as Record<string, unknown>).status = { qosClass: 3 })),
    status: 400,
    message: /request\.object\.status\.qosClass: expected string, got number/,
  },
  {
    name: 'an operation in lower case',
    body: withRequest((r) => (r.operation = 'create')),
    status: 400,
    message: /request\.operation: unsupported value "create"/,
  },
];

/** A body with one number literal written as given, since JSON.stringify cannot write 1e20 or 1e400. */
function withNumber(
  change: (pod: { metadata: Record<string, unknown>; spec: Record<string, unknown> }) => void,
  placeholder: string,
  literal: string,
): string {
  const body = withObject(change);
  assert.ok(body.includes(placeholder), `placeholder ${placeholder} in the body`);
  return body.replace(placeholder, literal);
}

function validReviewText(): string {
  return JSON.stringify(validReview());
}

describe('bad input gets a precise 4xx', () => {
  for (const row of rows) {
    it(`${row.name} → ${row.status}`, async () => {
      const res = await request(app)
        .post('/mutate')
        .set('Content-Type', row.contentType ?? 'application/json')
        // Bytes exactly as given: superagent would otherwise encode a Buffer as JSON.
        .serialize((body: unknown) => body as string)
        .send(row.body);
      assert.equal(res.status, row.status);
      assert.match(res.headers['content-type'] ?? '', /^application\/json/);
      const status = JSON.parse(res.text) as { kind: string; code: number; status: string; message: string };
      assert.equal(status.kind, 'Status');
      assert.equal(status.status, 'Failure');
      assert.equal(status.code, row.status);
      assert.match(status.message, row.message);
      assert.doesNotMatch(res.text, /at .*\.ts:\d+/, 'no stack trace on the wire');
    });
  }

  it('a body over the 37 MiB limit → 413 (test/http/largest-review.test.ts says where 37 MiB comes from)', async () => {
    const res = await request(app)
      .post('/mutate')
      .set('Content-Type', 'application/json')
      .send(`{"pad":"${'x'.repeat(maxBodyBytes)}"}`);
    assert.equal(res.status, 413);
    assert.match((JSON.parse(res.text) as { message: string }).message, /larger than the limit of 37 MiB/);
  });

  it('__proto__ and constructor keys are plain data, not a prototype', async () => {
    const body = withObject((p) => {
      p.metadata.labels = JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":"x"}') as Record<string, unknown>;
    });
    const res = await request(app)
      .post('/mutate')
      .set('Content-Type', 'application/json')
      .send(body.replace('"__proto__":{"polluted":"yes"}', '"__proto__":"x"'));
    assert.equal(res.status, 200);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('a GET on a review path → 405, an unknown path → 404', async () => {
    const get = await request(app).get('/mutate');
    assert.equal(get.status, 405);
    const unknown = await request(app).post('/admit').set('Content-Type', 'application/json').send('{}');
    assert.equal(unknown.status, 404);
  });

  it('a CREATE whose oldObject is {} (as some replay tools send) is answered as with null: nothing reads it', async () => {
    const withNull = await request(app)
      .post('/mutate')
      .set('Content-Type', 'application/json')
      .send(withRequest((r) => (r.oldObject = null)));
    const withEmpty = await request(app)
      .post('/mutate')
      .set('Content-Type', 'application/json')
      .send(withRequest((r) => (r.oldObject = {})));
    assert.equal(withEmpty.status, 200);
    assert.deepEqual(withEmpty.body, withNull.body);
  });

  it('after all of that the server still answers a valid review', async () => {
    const res = await request(app).post('/mutate').set('Content-Type', 'application/json').send(validReviewText());
    assert.equal(res.status, 200);
    assert.equal((res.body as { response: { allowed: boolean } }).response.allowed, true);
  });
});
