/**
 * Reads the samples of `kubernetes_feature_enabled` out of the API server's `/metrics`, chunk by
 * chunk as the body arrives, without holding the body: the exposition of a kube-apiserver runs to
 * several megabytes, and the one family needed is a few hundred short lines of it.
 *
 * Upstream:
 * - staging/src/k8s.io/component-base/metrics/prometheus/feature/metrics.go: the gauge
 *   `kubernetes_feature_enabled{name, stage}`, 1 for a gate that is on and 0 for one that is off,
 *   recorded for every registered gate when the server starts (`stage`: `ALPHA`, `BETA`, the empty
 *   string for GA, `DEPRECATED`).
 * - The Prometheus text format (prometheus/common expfmt, version 0.0.4): one sample a line,
 *   `name{label="value",…} value [timestamp]`, label values escaped with `\\`, `\"` and `\n`;
 *   `# HELP` and `# TYPE` lines before each family; families written sorted by name, each one's
 *   samples together. So once a line of another family follows the feature family, the rest of
 *   the body cannot hold a sample of it and the reader may stop.
 *
 * Hostile or broken input (the endpoint could be a proxy's, or cut short) costs time linear in its
 * length and memory bounded by one line (maxLineBytes): a sample line that does not parse, a value
 * other than 0 or 1, or two samples of one gate that disagree leave that gate unknown, never a guess.
 */
import { isFeatureGateName, type FeatureGateName } from './feature-gates.js';

export const featureEnabledMetric = 'kubernetes_feature_enabled';

/**
 * The longest line kept. A feature sample is under 150 bytes (the metric name, a gate name of at
 * most ~60 characters, a stage, a value, maybe a 13-digit timestamp); 1 KiB leaves room for
 * escapes and extra labels. Only the first maxLineBytes of a longer line are kept: enough to tell
 * its family, and a sample of the feature family that long is malformed.
 */
export const maxLineBytes = 1024;

export interface FeatureGateSample {
  readonly enabled: boolean;
  /** The `stage` label as the server wrote it (for the log). */
  readonly stage: string;
}

export interface FeatureEnabledScan {
  /** The gates tolerator knows, as the server reported them; a gate absent here was not reported usably. */
  readonly samples: ReadonlyMap<FeatureGateName, FeatureGateSample>;
  /** Whether any line of the family was seen (an exposition without it is not a kube-apiserver's, or predates the metric). */
  readonly familySeen: boolean;
  /** Lines of the family that did not parse, or that contradicted another. */
  readonly malformedLines: number;
}

const newline = 0x0a;
const sampleStart = Buffer.from(featureEnabledMetric, 'latin1');
const helpStart = Buffer.from(`# HELP ${featureEnabledMetric}`, 'latin1');
const typeStart = Buffer.from(`# TYPE ${featureEnabledMetric}`, 'latin1');
const metadataStart = [Buffer.from('# HELP ', 'latin1'), Buffer.from('# TYPE ', 'latin1')];

type LineKind = 'feature-sample' | 'feature-metadata' | 'other-family' | 'neutral';

export class FeatureEnabledScanner {
  private readonly samples = new Map<FeatureGateName, FeatureGateSample>();
  /** Gates with contradicting samples: they stay unknown whatever follows. */
  private readonly contradicted = new Set<FeatureGateName>();
  private readonly line = Buffer.alloc(maxLineBytes);
  private lineLength = 0;
  private lineTruncated = false;
  private familySeen = false;
  private familyEnded = false;
  private malformedLines = 0;

  /**
   * Feeds the next piece of the body. Returns true once the family has ended: nothing after it can
   * change the result, and the caller may stop reading.
   */
  push(chunk: Uint8Array): boolean {
    let position = 0;
    while (position < chunk.length && !this.familyEnded) {
      const end = chunk.indexOf(newline, position);
      const segmentEnd = end === -1 ? chunk.length : end;
      const room = maxLineBytes - this.lineLength;
      const length = segmentEnd - position;
      if (length > room) this.lineTruncated = true;
      const copied = Math.min(length, room);
      this.line.set(chunk.subarray(position, position + copied), this.lineLength);
      this.lineLength += copied;
      if (end === -1) break;
      this.finishLine();
      position = end + 1;
    }
    return this.familyEnded;
  }

  /** The end of the body; a last line without a newline still counts. */
  end(): FeatureEnabledScan {
    if (!this.familyEnded && (this.lineLength > 0 || this.lineTruncated)) this.finishLine();
    return { samples: this.samples, familySeen: this.familySeen, malformedLines: this.malformedLines };
  }

  private finishLine(): void {
    let length = this.lineLength;
    if (length > 0 && this.line[length - 1] === 0x0d) length--;
    const line = this.line.subarray(0, length);
    const truncated = this.lineTruncated;
    this.lineLength = 0;
    this.lineTruncated = false;
    const kind = lineKind(line);
    if (kind === 'neutral') return;
    if (kind === 'other-family') {
      if (this.familySeen) this.familyEnded = true;
      return;
    }
    this.familySeen = true;
    if (kind === 'feature-metadata') return;
    const sample = truncated ? undefined : parseFeatureSample(line.toString('latin1'));
    if (sample === undefined) {
      this.malformedLines++;
      return;
    }
    if (sample.name === undefined) return;
    this.record(sample.name, sample.sample);
  }

  private record(name: FeatureGateName, sample: FeatureGateSample): void {
    if (this.contradicted.has(name)) {
      this.malformedLines++;
      return;
    }
    const earlier = this.samples.get(name);
    if (earlier !== undefined && earlier.enabled !== sample.enabled) {
      this.samples.delete(name);
      this.contradicted.add(name);
      this.malformedLines++;
      return;
    }
    this.samples.set(name, sample);
  }
}

function startsWith(line: Buffer, prefix: Buffer): boolean {
  return line.length >= prefix.length && line.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** The byte after a metric name: the name ends there, so `kubernetes_feature_enabled_x` is another family. */
function endsName(byte: number | undefined): boolean {
  return byte === undefined || byte === 0x7b /* { */ || byte === 0x20 || byte === 0x09;
}

function lineKind(line: Buffer): LineKind {
  if (line.length === 0) return 'neutral';
  if (line[0] === 0x23 /* # */) {
    if (startsWith(line, helpStart) || startsWith(line, typeStart)) {
      if (endsName(line[helpStart.length])) return 'feature-metadata';
    }
    // HELP and TYPE lines name their family; any other comment belongs to none.
    return metadataStart.some((prefix) => startsWith(line, prefix)) ? 'other-family' : 'neutral';
  }
  if (startsWith(line, sampleStart) && endsName(line[sampleStart.length])) return 'feature-sample';
  return 'other-family';
}

/**
 * One sample line of the family: its `name` label (undefined when it names a gate tolerator does
 * not read) and value, or undefined when the line does not parse or the value is not 0 or 1.
 */
export function parseFeatureSample(line: string): { name: FeatureGateName | undefined; sample: FeatureGateSample } | undefined {
  let position = featureEnabledMetric.length;
  const labels = new Map<string, string>();
  if (line[position] === '{') {
    const parsed = parseLabels(line, position + 1, labels);
    if (parsed === undefined) return undefined;
    position = parsed;
  }
  const fields = line.slice(position).split(/[ \t]+/);
  // After the labels: a separator (an empty first field), the value and an optional timestamp.
  if (fields[0] !== '' || fields.length < 2 || fields.length > 3) return undefined;
  const value = sampleValue(fields[1] ?? '');
  if (value === undefined || (fields.length === 3 && !/^-?[0-9]{1,19}$/.test(fields[2] ?? ''))) return undefined;
  const gate = labels.get('name');
  if (gate === undefined || gate === '') return undefined;
  return { name: isFeatureGateName(gate) ? gate : undefined, sample: { enabled: value, stage: labels.get('stage') ?? '' } };
}

/** 1 → on, 0 → off; any other value (2, NaN, a word) is not what the gauge records. */
function sampleValue(text: string): boolean | undefined {
  if (text === '' || !/^[0-9.eE+-]+$/.test(text)) return undefined;
  const value = Number(text);
  return value === 1 ? true : value === 0 ? false : undefined;
}

/** `name="value",…}` from `start`; returns the position after `}`, or undefined when it does not parse. */
function parseLabels(line: string, start: number, labels: Map<string, string>): number | undefined {
  let position = start;
  for (;;) {
    position = skipBlanks(line, position);
    if (line[position] === '}') return position + 1;
    const nameStart = position;
    while (position < line.length && isLabelNameChar(line.charCodeAt(position), position === nameStart)) position++;
    if (position === nameStart) return undefined;
    const name = line.slice(nameStart, position);
    position = skipBlanks(line, position);
    if (line[position] !== '=') return undefined;
    position = skipBlanks(line, position + 1);
    if (line[position] !== '"') return undefined;
    position++;
    let value = '';
    for (;;) {
      const char = line[position];
      if (char === undefined) return undefined;
      position++;
      if (char === '"') break;
      if (char !== '\\') {
        value += char;
        continue;
      }
      const escaped = line[position];
      position++;
      if (escaped === '\\' || escaped === '"') value += escaped;
      else if (escaped === 'n') value += '\n';
      else return undefined;
    }
    if (labels.has(name)) return undefined;
    labels.set(name, value);
    position = skipBlanks(line, position);
    if (line[position] === ',') position++;
    else if (line[position] !== '}') return undefined;
  }
}

function skipBlanks(line: string, position: number): number {
  let next = position;
  while (line[next] === ' ' || line[next] === '\t') next++;
  return next;
}

/** `[a-zA-Z_][a-zA-Z0-9_]*`, the Prometheus label name. */
function isLabelNameChar(code: number, first: boolean): boolean {
  const letter = (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;
  return letter || (!first && code >= 0x30 && code <= 0x39);
}
