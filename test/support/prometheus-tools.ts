/**
 * Debian's `prometheus` package for the monitoring tests: `promtool` (rule checks and unit tests)
 * and `prometheus` itself. Where they are missing the tests skip and say so, unless
 * TOLERATOR_REQUIRE_PROMETHEUS=1 (CI sets it after installing the package): a missing tool is then
 * a failure, so a CI run never passes by skipping them.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { MONITORING_DIR } from './rendered-manifests.js';

export const REQUIRE_PROMETHEUS = process.env.TOLERATOR_REQUIRE_PROMETHEUS === '1';

/** undefined when the tool answers `--version`; else why it cannot be used. */
function missing(tool: string): string | undefined {
  const run = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  return run.error === undefined && run.status === 0 ? undefined : `${tool} not found (apt-get install prometheus)`;
}

/**
 * The `skip` option of a test that needs these tools: false when they are there, the reason
 * otherwise. With TOLERATOR_REQUIRE_PROMETHEUS=1 a missing tool throws instead.
 */
export function skipWithout(...tools: readonly ('promtool' | 'prometheus')[]): string | false {
  const reasons = tools.map(missing).filter((reason) => reason !== undefined);
  if (reasons.length === 0) return false;
  const reason = reasons.join('; ');
  if (REQUIRE_PROMETHEUS) throw new Error(`TOLERATOR_REQUIRE_PROMETHEUS=1 but ${reason}`);
  return `${reason}: skipped (TOLERATOR_REQUIRE_PROMETHEUS=1 makes this a failure)`;
}

export interface RuleGroups {
  readonly groups: readonly { readonly name: string; readonly rules: readonly Record<string, unknown>[] }[];
}

/** The shipped PrometheusRule's spec: the rule groups, as a Prometheus rule file holds them. */
export function shippedRuleGroups(): RuleGroups {
  const rule = parse(readFileSync(join(MONITORING_DIR, 'prometheus-rule.yaml'), 'utf8')) as { spec: RuleGroups };
  return rule.spec;
}

/** The shipped rule groups as tolerator-rules.yaml in `dir` (default: a fresh temporary directory). */
export function writeRuleFile(dir = mkdtempSync(join(tmpdir(), 'tolerator-rules-'))): { readonly dir: string; readonly file: string } {
  const file = join(dir, 'tolerator-rules.yaml');
  writeFileSync(file, stringify(shippedRuleGroups()));
  return { dir, file };
}
