/**
 * The JSON log line's shape, shared by every logger the process makes: the level as its word
 * (`"level":"info"`), as the JSON logs of the ecosystem read (klog's JSON format, controller-runtime's
 * zap, Kyverno, Gatekeeper), so a log pipeline's `level == "error"` filter works without knowing
 * pino's numbers (30 info, 40 warn, 50 error). The time stays pino's epoch milliseconds.
 */
import type { LoggerOptions } from 'pino';

export const logFormat = {
  formatters: {
    level: (label: string) => ({ level: label }),
  },
} as const satisfies LoggerOptions;
