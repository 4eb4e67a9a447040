/**
 * What tolerator's patch costs kube-apiserver to apply: `npm run bench -- --only patch` (also part
 * of the full run). The API server applies a mutating webhook's patch with
 * gopkg.in/evanphx/json-patch.v4; `kubectl patch --local --type=json` applies it with the same
 * library (and decodes and prints the object around it, which the floor measures: the same object
 * with a one-operation patch, in the same run).
 *
 * For each shape of test/support/patch-shapes.ts, at the size the issue names: the patch tolerator
 * sends (bounded, src/admission/json-patch-diff.ts), and the one the diff writes without its bounds
 * (what tolerator sent before them), each timed with kubectl and counted with the model of
 * test/support/json-patch-cost.ts (array pointers copied, path and value bytes). The unbounded
 * patch of the `{}` shape takes tens of minutes at its full size (its copies grow with n²), so it
 * is measured at a tenth of it.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { diffJson, type JsonPatchOperation } from '../src/admission/json-patch-diff.js';
import { findKubectl } from '../test/cluster/binaries.js';
import { evanphxCost } from '../test/support/json-patch-cost.js';
import { mutatingPatch, patchShapes, type PatchShape } from '../test/support/patch-shapes.js';

export const patchBegin = '<!-- patch: written by `npm run bench -- --only patch` -->';
export const patchEnd = '<!-- /patch -->';

const unbounded = { maxArrayOperations: Number.POSITIVE_INFINITY, negligibleCopies: 0, maxPatchOperations: Number.POSITIVE_INFINITY };

interface Case {
  readonly shape: PatchShape;
  readonly n: number;
  /** The size the unbounded patch is timed at (its model is counted at n too). */
  readonly unboundedN: number;
}

function shape(name: string): PatchShape {
  const found = patchShapes.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no patch shape ${name}`);
  return found;
}

const cases: readonly Case[] = [
  // The Deployment of the issue: its template repeats one toleration 35,000 times, and each pod
  // its ReplicaSet creates is reviewed with them.
  { shape: shape('n copies of one toleration'), n: 35_000, unboundedN: 35_000 },
  // The 900 KB dry-run pod of the issue.
  { shape: shape('n empty tolerations {}'), n: 300_000, unboundedN: 30_000 },
  // The 20,000 ORed terms of the messages item: one requirement ANDed into each.
  { shape: shape('a tenant pod with n ORed node selector terms'), n: 20_000, unboundedN: 20_000 },
];

interface Timed {
  readonly ops: number;
  readonly patchKib: number;
  readonly copiedMib: number;
  readonly workMib: number;
  readonly ms: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

export async function measurePatchCost(options: { readonly dir: string; readonly note: (text: string) => void }): Promise<string[]> {
  const kubectl = findKubectl();
  if (kubectl === undefined) {
    return [patchBegin, "## The patch, applied by kube-apiserver's library", '', 'Not measured: no kubectl found.', '', patchEnd];
  }
  const objectFile = join(options.dir, 'patch-object.json');
  const patchFile = join(options.dir, 'patch.json');
  /** Milliseconds of one kubectl patch --local of the object last written. */
  const time = (patch: readonly JsonPatchOperation[]): number => {
    writeFileSync(patchFile, JSON.stringify(patch));
    const started = performance.now();
    execFileSync(kubectl.path, ['patch', '--local', '-f', objectFile, '--type=json', '--patch-file', patchFile, '-o', 'json'], {
      maxBuffer: 1 << 30,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return performance.now() - started;
  };
  const model = (object: unknown, patch: readonly JsonPatchOperation[]): Omit<Timed, 'ms'> => {
    const cost = evanphxCost(object, patch);
    return {
      ops: patch.length,
      patchKib: Buffer.byteLength(JSON.stringify(patch)) / 1024,
      copiedMib: cost.copiedBytes / 1024 / 1024,
      workMib: cost.total / 1024 / 1024,
    };
  };
  const floorPatch: JsonPatchOperation[] = [{ op: 'add', path: '/metadata/labels/bench', value: 'floor' }];

  const rows: string[] = [];
  const scaled: string[] = [];
  const row = (name: string, label: string, size: number, kib: number, timed: Timed, floorMs: number): string =>
    `| ${name} | ${size.toLocaleString('en-US')} | ${kib.toFixed(0)} | ${label} | ${timed.ops.toLocaleString('en-US')} | ${timed.patchKib.toFixed(1)} | ${timed.copiedMib.toFixed(1)} | ${timed.workMib.toFixed(1)} | ${Math.round(floorMs).toLocaleString('en-US')} | ${Math.round(timed.ms).toLocaleString('en-US')} | ${(timed.ms / floorMs).toFixed(2)} |`;
  for (const { shape: patchShape, n, unboundedN } of cases) {
    options.note(`patch: ${patchShape.name}, n = ${n.toLocaleString('en-US')}`);
    const { object, patch } = await mutatingPatch(patchShape, n);
    writeFileSync(objectFile, JSON.stringify(object));
    const objectKib = Buffer.byteLength(JSON.stringify(object)) / 1024;
    // The floor and tolerator's patch in turn, five rounds, so that the machine's load falls on both alike.
    const floorRuns: number[] = [];
    const boundedRuns: number[] = [];
    for (let round = 0; round < 5; round++) {
      floorRuns.push(time(floorPatch));
      boundedRuns.push(time(patch));
    }
    const floor = median(floorRuns);
    rows.push(row(patchShape.name, 'tolerator', n, objectKib, { ...model(object, patch), ms: median(boundedRuns) }, floor));
    // Without the bounds, at a size whose quadratic cost stays within a minute or so.
    const small = unboundedN === n ? { object, patch } : await mutatingPatch(patchShape, unboundedN);
    const mutated = jsonpatch.applyPatch(structuredClone(small.object), small.patch as jsonpatch.Operation[], true, false).newDocument;
    const unboundedPatch = diffJson(small.object, mutated, unbounded);
    const unboundedModel = model(small.object, unboundedPatch);
    if (unboundedN !== n) {
      const factor = (n / unboundedN) ** 2;
      scaled.push(
        `${patchShape.name} at ${n.toLocaleString('en-US')} without the bounds: ${factor.toFixed(0)} times the ${unboundedN.toLocaleString('en-US')} row (the copies grow with n²), about ${((unboundedModel.copiedMib * factor) / 1024).toFixed(0)} GiB of pointers copied`,
      );
    }
    writeFileSync(objectFile, JSON.stringify(small.object));
    const smallFloor = unboundedN === n ? floor : median([time(floorPatch), time(floorPatch), time(floorPatch)]);
    rows.push(
      row(
        patchShape.name,
        'without the bounds',
        unboundedN,
        Buffer.byteLength(JSON.stringify(small.object)) / 1024,
        { ...unboundedModel, ms: time(unboundedPatch) },
        smallFloor,
      ),
    );
  }
  return [
    patchBegin,
    "## The patch, applied by kube-apiserver's library",
    '',
    `\`kubectl patch --local --type=json\` (${kubectl.source === 'PATH' ? 'the kubectl on the PATH' : 'the control plane build'}, gopkg.in/evanphx/json-patch.v4 as in kube-apiserver's mutating webhook dispatcher) of the object the mutating webhook reviews, with the patch tolerator sends and with the one its diff writes without the bounds of src/admission/json-patch-diff.ts (what it sent before them). "floor ms" is the same object with a one-operation patch in the same run (kubectl's decode and print); "copied MiB" and "work MiB" are the model of test/support/json-patch-cost.ts (array pointers copied by add and remove; that plus path and value bytes). Wall times are on a machine shared with other work: compare them with the floor beside them; the model's counts do not depend on the load.`,
    '',
    '| shape | n | object KiB | patch | operations | patch KiB | copied MiB | work MiB | floor ms | kubectl ms | ratio to floor |',
    '| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    `Without the bounds the copies grow with the square of n (each removal copies the rest of the array; ${scaled.join('; ')}); with them the patch is one \`replace\` of the array, and kubectl takes about what its floor takes (less, since the object it then prints holds a few tolerations, not all of them). The terms shape is linear either way (each term is its own short array); the bound turns its 20,001 operations into one \`replace\` of the terms, which costs kubectl a decode and an encode of that value.`,
    '',
    patchEnd,
  ];
}

/** `text` with its patch section replaced by `section` (or put before the targets, or at the end). */
export function splicePatchSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(patchBegin);
  const end = text.indexOf(patchEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + patchEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
