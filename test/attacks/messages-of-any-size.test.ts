/**
 * Messages of any size: every denial, warning and audit annotation tolerator writes is bounded,
 * whatever the tenant's pod. kube-apiserver copies a webhook's denial into its answer and into
 * every audit event of the request, and bounds none of it; a tenant pod with 20,000 ORed node
 * selector terms got a 5.5 MB denial (one violation's text joined every term and every value).
 *
 * Each shape is reviewed at n and 4n through the pipeline and the response builder, as the server
 * answers it; the text the response carries (the Status's message and causes, the warnings, the
 * audit annotations, counted as kube-apiserver encodes them) must stay within the 64 KiB bound
 * and must not grow from n to 4n: bounded text does not grow with the pod, text that joins the
 * pod's lists grows four-fold.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAdmissionReview } from '../../src/admission/review.js';
import { buildAdmissionResponse, type AdmissionResponse } from '../../src/admission/response.js';
import { maxCauses } from '../../src/admission/status.js';
import type { WebhookSide } from '../../src/admission/pipeline.js';
import { goJsonBytes } from '../../src/api/text-bounds.js';
import { loadReviewFixture, pipelineFromArgs } from '../support/harness.js';

type Json = Record<string, unknown>;

/** The 64 KiB of text one response may carry (src/admission/response.ts). */
const responseTextBound = 64 * 1024;

/** The bytes of text a response carries, as kube-apiserver encodes them (strings only, as the bound counts them). */
function textBytes(response: AdmissionResponse): number {
  let bytes = 0;
  const status = response.status;
  if (status !== undefined) {
    bytes += goJsonBytes(status.message);
    for (const cause of status.details?.causes ?? [])
      bytes += goJsonBytes(cause.reason) + goJsonBytes(cause.message) + goJsonBytes(cause.field);
  }
  for (const warning of response.warnings ?? []) bytes += goJsonBytes(warning);
  for (const [key, value] of Object.entries(response.auditAnnotations ?? {})) bytes += goJsonBytes(key) + goJsonBytes(value);
  return bytes;
}

interface Shape {
  readonly name: string;
  readonly fixture: string;
  readonly side: WebhookSide;
  /** Grows the object's spec with n of something. */
  readonly grow: (spec: Json, n: number) => void;
  /** What the answer must be, whatever its size. */
  readonly check: (response: AdmissionResponse, n: number) => void;
}

const shapes: readonly Shape[] = [
  {
    name: 'a tenant pod with n ORed node selector terms, each excluding its group with 20 values',
    fixture: 'tenant-pod-skipped-mutation-create',
    side: 'validate',
    grow: (spec, n) => {
      spec.affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: Array.from({ length: n }, (_, i) => ({
              matchExpressions: [
                { key: 'dedicated', operator: 'NotIn', values: ['gpu', ...Array.from({ length: 20 }, (_, v) => `value-${i}-${v}`)] },
              ],
            })),
          },
        },
      };
    },
    check: (response, n) => {
      assert.equal(response.allowed, false);
      const message = response.status?.message ?? '';
      assert.match(message, /may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes/);
      assert.match(message, new RegExp(`and ${n - 10} more`));
      assert.match(message, /\[gpu, value-0-0, .*and 11 more values\]/);
    },
  },
  {
    name: 'a pod with n invalid tolerations',
    fixture: 'several-errors-create',
    side: 'validate',
    grow: (spec, n) => {
      spec.tolerations = Array.from({ length: n }, (_, i) => ({
        key: `bad key ${i}`,
        operator: 'Equal',
        value: 'not a value!',
        effect: 'Never',
      }));
    },
    check: (response, n) => {
      assert.equal(response.allowed, false);
      const causes = response.status?.details?.causes ?? [];
      assert.ok(causes.length <= maxCauses, `${causes.length} causes`);
      const note = causes.at(-1);
      // Three errors a toleration (its key, its value, its effect), all but the ones shown counted.
      assert.deepEqual(note, {
        reason: 'FieldValueTooMany',
        message: `and ${3 * n - (causes.length - 1)} more causes, left out`,
        field: '',
      });
      assert.match(response.status?.message ?? '', /more errors\](?: \(and \d+ more field errors, not listed\))?$/);
    },
  },
  {
    name: "an infrastructure namespace's pod with n tolerations of other groups' taints",
    fixture: 'infrastructure-tolerate-everything-create',
    side: 'validate',
    grow: (spec, n) => {
      spec.tolerations = Array.from({ length: n }, (_, i) => ({
        key: 'dedicated',
        operator: 'Equal',
        value: `group-${i}`,
        effect: 'NoSchedule',
      }));
    },
    check: (response, n) => {
      assert.equal(response.allowed, true);
      const uses = response.auditAnnotations?.['dedicated-nodes-infrastructure'] ?? '';
      assert.match(uses, /^allowed for an infrastructure namespace: /);
      assert.match(uses, new RegExp(`and ${n - 10} more`));
    },
  },
  {
    name: 'a pod whose n-character toleration key is invalid',
    fixture: 'several-errors-create',
    side: 'validate',
    grow: (spec, n) => {
      spec.tolerations = [{ key: 'k'.repeat(n), operator: 'Exists', effect: 'NoSchedule' }];
    },
    check: (response, n) => {
      assert.equal(response.allowed, false);
      assert.match(response.status?.message ?? '', new RegExp(`"k{1024}…\\(${n - 1024} more characters\\)"`));
    },
  },
];

async function answer(shape: Shape, n: number): Promise<AdmissionResponse> {
  const fixture = loadReviewFixture(shape.fixture);
  const review = structuredClone(fixture.review);
  shape.grow((review.request.object as Json).spec as Json, n);
  const parsed = parseAdmissionReview(JSON.stringify(review));
  const { decision } = await pipelineFromArgs(fixture.args).review(parsed, [shape.side]);
  return buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision).response;
}

describe('messages of any size', () => {
  // 20,000 terms at 4n: the pod of the issue (3 MiB of pod, an 11 MB denial before).
  const n = 5_000;
  for (const shape of shapes) {
    it(`${shape.name}: the response's text is bounded, the same at n and 4n`, async () => {
      const bytes: number[] = [];
      for (const size of [n, 4 * n]) {
        const response = await answer(shape, size);
        const text = textBytes(response);
        assert.ok(text <= responseTextBound, `${text} bytes of text at n = ${size}`);
        shape.check(response, size);
        bytes.push(text);
      }
      const [atN = 0, at4N = 0] = bytes;
      // Bounded text stays put (the counts of what was left out gain a digit or two); text that
      // joins the pod's lists grows four-fold.
      assert.ok(at4N <= atN * 1.1, `${atN} bytes at n, ${at4N} at 4n`);
    });
  }
});
