/**
 * How large a review body can be, derived from what kube-apiserver can send, and the check that
 * a body larger than an unescaped review could be is one the API server wrote at all.
 *
 * - kube-apiserver refuses request bodies over 3 MiB (`MaxRequestBodyBytes`,
 *   staging/src/k8s.io/apiserver/pkg/server/config.go: `int64(3 * 1024 * 1024)`), so an object a
 *   client creates or updates is at most 3 MiB as the client wrote it.
 * - The API server writes the AdmissionReview with Go's encoding/json
 *   (apimachinery's json serializer: `json.NewEncoder(w).Encode(obj)`), which escapes `<`, `>`
 *   and `&` as `\u003c`, `\u003e`, `\u0026`: six bytes for one. (U+2028 and U+2029 become six
 *   bytes for three, a byte that is not UTF-8 becomes `\ufffd`, six for one; the 2-byte escapes
 *   `\"`, `\\`, `\n` double at most.) So one object can be 6 × 3 MiB = 18 MiB in the review.
 *   Defaults the API server writes into a valid object stay below that factor (a minimal
 *   container of ~25 bytes gains ~110 bytes of defaults: about 5 ×).
 * - An UPDATE carries `object` and `oldObject`: 2 × 18 MiB, plus 1 MiB for the envelope
 *   (userInfo with its groups and extra, options, kinds) = 37 MiB.
 *
 * Beyond what escaping explains, a body is not the API server's: the bytes outside JSON strings
 * (braces, brackets, commas, colons, numbers, literals) are never escaped, so in a body the API
 * server sends they are at most those of two 3 MiB objects and the envelope, 7 MiB. That bound is
 * what keeps parsing bounded: a string parses to about one byte (or two) per character however
 * it was escaped, while an empty object `{}` of three bytes parses to some fifty. A 37 MiB body of
 * `[{},{},…]` would be twelve million objects; it is refused before it is parsed.
 *
 * What this does not cover: a PATCH's result and a protobuf client's object are not bounded by
 * the 3 MiB of the request that made them, and a mutating webhook sees objects before validation,
 * which may carry more defaults than any valid object. Such a review, if it exceeds these
 * bounds, is refused with 413 and the webhook's failurePolicy applies to it.
 */

/** kube-apiserver's MaxRequestBodyBytes: the largest object a client can send. */
export const maxObjectBytes = 3 * 1024 * 1024;

/** Go's encoding/json writes `<`, `>`, `&` as six bytes each: the most an object grows in the review. */
export const maxEscapeExpansion = 6;

/** The AdmissionReview around the objects: uid, kinds, resource, userInfo (groups, extra), options. */
export const envelopeBytes = 1024 * 1024;

/** The largest body read: an UPDATE of two fully escaped 3 MiB objects and the envelope (37 MiB). */
export const maxBodyBytes = 2 * maxEscapeExpansion * maxObjectBytes + envelopeBytes;

/** The most bytes outside JSON strings a body of the API server holds: two 3 MiB objects and the envelope (7 MiB). */
export const maxStructureBytes = 2 * maxObjectBytes + envelopeBytes;

const quote = 0x22;
const backslash = 0x5c;

/**
 * The bytes of `body` outside JSON strings (the quotes themselves count as string), stopping as
 * soon as the count exceeds `limit`. A linear scan over bytes: a backslash inside a string skips
 * the byte after it, so `\"` does not end the string. Not a validator: the parser that follows
 * refuses what is not JSON; this only bounds what that parser will build.
 */
export function structureBytes(body: Uint8Array, limit: number): number {
  let outside = 0;
  let inString = false;
  const length = body.length;
  for (let i = 0; i < length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === backslash) {
        i++;
      } else if (byte === quote) {
        inString = false;
      }
    } else if (byte === quote) {
      inString = true;
    } else if (++outside > limit) {
      return outside;
    }
  }
  return outside;
}

/** 37 MiB as "37 MiB": the limits in messages, read from the constants so that they cannot drift. */
export function mebibytes(bytes: number): string {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
}
