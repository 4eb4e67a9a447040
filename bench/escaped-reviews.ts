/**
 * The largest review kube-apiserver can send: an UPDATE whose object and oldObject are each just
 * under 3 MiB as the client wrote them (MaxRequestBodyBytes), made of the characters Go's
 * encoding/json escapes as six bytes (`<`, `>`, `&`), so the review is about 36 MiB, next to the
 * 37 MiB limit (src/admission/body-limits.ts). A valid pod: container environment values may hold any
 * text. Pure builders, reading only the fixture they start from.
 */
import { readFileSync } from 'node:fs';
import type { WorstReview } from './worst-reviews.js';

type Json = Record<string, unknown>;

/** kube-apiserver's MaxRequestBodyBytes. */
const maxObjectBytes = 3 * 1024 * 1024;

/** What Go's encoding/json writes: JSON.stringify's text with `<`, `>` and `&` escaped as it escapes them. */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

const fixture = new URL('../test/fixtures/reviews/tenant-pod-after-mutation-create.json', import.meta.url);

/** The review's text as the API server writes it, and the size of one object as the client wrote it. */
export function largestEscapedUpdate(): { body: string; objectBytes: number } {
  const review = (JSON.parse(readFileSync(fixture, 'utf8')) as { review: Json }).review;
  const request = review.request as Json;
  request.operation = 'UPDATE';
  const object = request.object as { spec: { containers: Json[] } };
  const container = object.spec.containers[0] ?? {};
  const value = '<'.repeat(1000);
  const entry = (i: number): Json => ({ name: `E${i}`, value });
  const base = Buffer.byteLength(JSON.stringify(object));
  const per = Buffer.byteLength(JSON.stringify(entry(10_000))) + 1;
  // 1,000 bytes short of the limit: the entries' names grow with their index.
  container.env = Array.from({ length: Math.floor((maxObjectBytes - base - 1_000) / per) }, (_, i) => entry(i));
  const objectBytes = Buffer.byteLength(JSON.stringify(object));
  request.oldObject = structuredClone(object);
  return { body: goJson(review), objectBytes };
}

/** The worst-review entry: the validating side (the pod as the mutating webhook left it). */
export function escapedUpdateReview(): WorstReview {
  return {
    shape: 'UPDATE, object and oldObject of 3 MiB of <, escaped to 36 MiB',
    path: '/validate',
    operation: 'UPDATE',
    build: () => largestEscapedUpdate().body,
  };
}
