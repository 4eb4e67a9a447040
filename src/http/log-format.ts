/**
 * The JSON log line's shape, shared by every logger the process makes: the level as its word
 * (`"level":"info"`), as the JSON logs of the ecosystem read (klog's JSON format, controller-runtime's
 * zap, Kyverno, Gatekeeper), so a log pipeline's `level == "error"` filter works without knowing
 * pino's numbers (30 info, 40 warn, 50 error). The time stays pino's epoch milliseconds.
 *
 * And its length: at most `maxLogLineBytes`. The fields that quote a review are clipped where the
 * line is made (src/admission/run-review.ts `summarizeReview`, the refusals' messages); this is the
 * bound on every other line, whatever it was given (an error whose message quotes an object).
 */
import type { LoggerOptions } from 'pino';
import { clipToBytes } from '../api/text-bounds.js';

/**
 * 16 KiB: containerd's `max_container_log_line_size` (its CRI plugin's default, 16,384 bytes).
 * A longer line is split into partial records a log pipeline must join again, and a megabyte
 * line fills the kubelet's 10 MiB rotation (`containerLogMaxSize`) in a few reviews, losing the
 * replica's own lines. Ordinary lines are a few hundred bytes; an error with its stack a few KiB.
 */
export const maxLogLineBytes = 16 * 1024;

/**
 * How much of a line that was too long is kept, in bytes of JSON text: its start, where pino
 * writes the level, the time and the first fields. 6 KiB by Go's count (text-bounds.ts), which
 * counts a lone surrogate 3 bytes where JSON.stringify writes 6: at most 12 KiB either way.
 */
const keptBytes = 6 * 1024;

/**
 * A line of at most maxLogLineBytes (newline included): the line itself, or one in its place at
 * the same level that says how long it was and keeps its first 4 KiB as a string. Costs one
 * length check for an ordinary line; a long one is not parsed.
 */
export function boundLogLine(line: string): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: a line this short cannot be over the bound.
  if (line.length * 3 <= maxLogLineBytes || Buffer.byteLength(line) <= maxLogLineBytes) return line;
  const level = /^\{"level":"([a-z]{1,10})"/.exec(line)?.[1] ?? 'error';
  const time = /^\{"level":"[a-z]{1,10}","time":(\d{1,16})/.exec(line)?.[1];
  const clipped = {
    level,
    ...(time === undefined ? {} : { time: Number(time) }),
    msg: `a log line of ${Buffer.byteLength(line)} bytes, clipped to its first ${keptBytes} bytes`,
    line: clipToBytes(line, keptBytes),
  };
  return `${JSON.stringify(clipped)}\n`;
}

export const logFormat = {
  formatters: {
    level: (label: string) => ({ level: label }),
  },
  hooks: {
    streamWrite: boundLogLine,
  },
} as const satisfies LoggerOptions;
