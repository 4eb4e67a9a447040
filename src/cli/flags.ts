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

export function usage(specs: Readonly<Record<string, FlagSpec>>): string {
  return Object.entries(specs)
    .map(([name, spec]) => {
      const left = `  --${name}${spec.kind === 'boolean' ? '' : ` ${spec.placeholder ?? spec.kind}`}`;
      return `${left.padEnd(48)} ${spec.help}`;
    })
    .join('\n');
}
