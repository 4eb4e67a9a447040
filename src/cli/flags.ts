/**
 * Command-line flags: their specs, and their parsing by commander (src/cli/program.ts says why
 * that library). Flags keep kube-apiserver's spelling (`--name=value` or `--name value`, the last
 * occurrence wins, as in spf13/pflag); a boolean flag takes no value.
 */
import { Command, CommanderError, Option } from 'commander';
import { parseInt64 } from '../api/go-strconv.js';
import { UsageError } from '../server/usage-error.js';

// Every command imports UsageError with its flags; it lives below the CLI because the server throws it too.
export { UsageError };

export type FlagKind = 'string' | 'boolean' | 'int';

export interface FlagSpec {
  readonly kind: FlagKind;
  readonly help: string;
  /** Shown in the usage text. */
  readonly placeholder?: string;
  /** A one-letter alias, as kubectl's `-o` and `-n`. */
  readonly short?: string;
  /** The only values the flag takes (shown in the help and offered by shell completion). */
  readonly choices?: readonly string[];
}

export interface ParsedFlags {
  readonly values: ReadonlyMap<string, string | boolean | bigint>;
  readonly positionals: readonly string[];
}

/** Declares each flag of `specs` on a commander command. */
export function addFlags(command: Command, specs: Readonly<Record<string, FlagSpec>>): void {
  for (const [name, spec] of Object.entries(specs)) {
    const value = spec.kind === 'boolean' ? '' : ` <${spec.placeholder ?? spec.kind}>`;
    const option = new Option(`${spec.short === undefined ? '' : `-${spec.short}, `}--${name}${value}`, spec.help);
    if (spec.choices !== undefined) option.choices(spec.choices);
    if (spec.kind === 'int') option.argParser((raw: string) => parseInt64Flag(name, raw));
    command.addOption(option);
  }
}

/** What commander parsed for the flags of `specs`, keyed by flag name; `positionals` are the command's arguments. */
export function readFlags(command: Command, specs: Readonly<Record<string, FlagSpec>>): ParsedFlags {
  const values = new Map<string, string | boolean | bigint>();
  for (const option of command.options) {
    const name = option.long?.slice(2);
    if (name === undefined || !Object.hasOwn(specs, name)) continue;
    const value: unknown = command.getOptionValue(option.attributeName());
    if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint') values.set(name, value);
  }
  return { values, positionals: [...command.args] };
}

/**
 * Parses a list of flags outside a command line: a `tolerator test` case's `args`, and the tests'
 * settings. A commander error (an unknown flag, a missing value) becomes a UsageError.
 */
export function parseFlags(argv: readonly string[], specs: Readonly<Record<string, FlagSpec>>): ParsedFlags {
  const command = new Command('flags')
    .helpOption(false)
    .allowExcessArguments(true)
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  addFlags(command, specs);
  try {
    command.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) throw new UsageError(error.message.replace(/^error: /, ''));
    throw error;
  }
  return readFlags(command, specs);
}

/** strconv.ParseBool, which pflag and component-base's feature gates use. */
export function parseBool(name: string, raw: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new UsageError(`invalid boolean value ${JSON.stringify(raw)} for --${name}`);
}

/**
 * An integer flag: base 10 (pflag's int64 flags also read `0x`, `0o` and `_`, which no tolerator
 * flag needs), parsed as Go's strconv.ParseInt(s, 10, 64) does (src/api/go-strconv.ts), with
 * the flag named in the message.
 */
export function parseInt64Flag(name: string, raw: string): bigint {
  const parsed = parseInt64(raw);
  if (parsed.error === undefined) {
    return parsed.value;
  }
  throw new UsageError(
    parsed.reason === 'range'
      ? `value ${raw} for --${name} is out of the int64 range`
      : `invalid integer value ${JSON.stringify(raw)} for --${name}`,
  );
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
