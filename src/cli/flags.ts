/**
 * Command-line flags in kube-apiserver's style (spf13/pflag): `--name=value` or `--name value`,
 * booleans as `--name` or `--name=true`, and a clear error for anything unknown or malformed.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export type FlagKind = 'string' | 'boolean' | 'int';

export interface FlagSpec {
  readonly kind: FlagKind;
  readonly help: string;
  /** Shown in the usage text. */
  readonly placeholder?: string;
}

export interface ParsedFlags {
  readonly values: ReadonlyMap<string, string | boolean | bigint>;
  readonly positionals: readonly string[];
}

/** Parses `argv` against the specs; the last occurrence of a flag wins, as in pflag. */
export function parseFlags(argv: readonly string[], specs: Readonly<Record<string, FlagSpec>>): ParsedFlags {
  const values = new Map<string, string | boolean | bigint>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const spec = specs[name];
    if (spec === undefined || !Object.hasOwn(specs, name)) {
      throw new UsageError(`unknown flag: --${name}`);
    }
    let raw: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    if (spec.kind === 'boolean') {
      values.set(name, raw === undefined ? true : parseBool(name, raw));
      continue;
    }
    if (raw === undefined) {
      raw = argv[i + 1];
      if (raw === undefined) {
        throw new UsageError(`flag needs an argument: --${name}`);
      }
      i++;
    }
    values.set(name, spec.kind === 'int' ? parseInt64Flag(name, raw) : raw);
  }
  return { values, positionals };
}

/** strconv.ParseBool, which pflag and component-base's feature gates use. */
export function parseBool(name: string, raw: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new UsageError(`invalid boolean value ${JSON.stringify(raw)} for --${name}`);
}

function parseInt64Flag(name: string, raw: string): bigint {
  if (!/^[+-]?[0-9]+$/.test(raw)) {
    throw new UsageError(`invalid integer value ${JSON.stringify(raw)} for --${name}`);
  }
  const value = BigInt(raw);
  if (value < -(2n ** 63n) || value > 2n ** 63n - 1n) {
    throw new UsageError(`value ${raw} for --${name} is out of the int64 range`);
  }
  return value;
}

/** Milliseconds per unit of Go's time.ParseDuration. */
const durationUnits: ReadonlyMap<string, number> = new Map([
  ['ns', 1e-6],
  ['us', 1e-3],
  ['\u00b5s', 1e-3],
  ['\u03bcs', 1e-3],
  ['ms', 1],
  ['s', 1_000],
  ['m', 60_000],
  ['h', 3_600_000],
]);

/**
 * Go's time.ParseDuration, as kube flags take durations (`90s`, `5m`, `1h30m`, `1.5h`, `0`), in
 * milliseconds; a negative duration is refused (no flag here means one).
 */
export function parseDuration(name: string, raw: string): number {
  const invalid = (): UsageError => new UsageError(`invalid duration ${JSON.stringify(raw)} for --${name} (for example 30s, 5m, 1h30m)`);
  const text = raw.startsWith('+') ? raw.slice(1) : raw;
  if (text.startsWith('-')) throw new UsageError(`--${name} may not be negative, got ${JSON.stringify(raw)}`);
  if (text === '0') return 0;
  if (text === '') throw invalid();
  const isNumberChar = (char: string | undefined): boolean => char === '.' || (char !== undefined && char >= '0' && char <= '9');
  let total = 0;
  let position = 0;
  while (position < text.length) {
    const numberStart = position;
    while (isNumberChar(text[position])) position++;
    const number = text.slice(numberStart, position);
    if (number === '' || number === '.' || number.indexOf('.') !== number.lastIndexOf('.')) throw invalid();
    const unitStart = position;
    while (position < text.length && !isNumberChar(text[position])) position++;
    const unit = durationUnits.get(text.slice(unitStart, position));
    if (unit === undefined) throw invalid();
    total += Number(number) * unit;
  }
  return total;
}

export function usage(specs: Readonly<Record<string, FlagSpec>>): string {
  return Object.entries(specs)
    .map(([name, spec]) => {
      const left = `  --${name}${spec.kind === 'boolean' ? '' : ` ${spec.placeholder ?? spec.kind}`}`;
      return `${left.padEnd(48)} ${spec.help}`;
    })
    .join('\n');
}
