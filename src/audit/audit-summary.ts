/**
 * What one audit found, gathered pod by pod, and the shapes it is shown in: the table and the
 * JSON of `tolerator audit`, the counts behind `tolerator_audit_violations`, and the
 * policy-report objects of the periodic audit. Pure: the caller feeds the pods' results and the
 * time, and writes the output.
 *
 * Memory: the findings are kept, never the pods; a finding is one message of bounded length
 * (audit-rules.ts clips its items). `tolerator audit` keeps every finding (its output is the
 * list). The periodic audit of `serve` keeps only what it publishes: exact counts by namespace,
 * rule and policy (the metrics, the reports' summaries) and the first findings of each namespace
 * (the reports' results), so a namespace with any number of violating pods costs it a bounded
 * amount of memory.
 */
import {
  auditRuleNames,
  compareViolations,
  type AuditRuleName,
  type AuditViolation,
  type PodAudit,
  type SkipReason,
} from './audit-rules.js';
import { SmallestPerNamespace } from './smallest-per-namespace.js';
import type { WorkloadFinding } from './workloads.js';

export interface AuditSummary {
  /** Pods judged by the rules. */
  readonly audited: number;
  readonly skipped: Readonly<Record<SkipReason, number>>;
  /** Pods a policy could not be evaluated for (the webhook would answer 500); each is in `undecided` (or its namespace's first, see keepPerNamespace). */
  readonly undecided: number;
  /** Violations by rule, every rule present (0 when none). */
  readonly byRule: Readonly<Record<AuditRuleName, number>>;
  /** By namespace (sorted), every namespace with a pod judged: its violations and the pods that broke no rule. */
  readonly byNamespace: readonly NamespaceSummary[];
}

export interface NamespaceSummary {
  readonly namespace: string;
  readonly violations: number;
  readonly passed: number;
}

export interface UndecidedPod {
  readonly namespace: string;
  readonly name: string;
  readonly message: string;
  /** Set for an object that is not a pod: a DRA claim the run could not judge. */
  readonly kind?: 'ResourceClaim';
}

/** How many findings of one rule (and policy, for the tenancy rules) one namespace has. */
export interface ViolationCount {
  readonly namespace: string;
  readonly rule: AuditRuleName;
  readonly policy?: string;
  readonly count: number;
}

/** How many audited pods of one namespace broke no rule: a policy report's `pass`. */
export interface PassCount {
  readonly namespace: string;
  readonly count: number;
}

export interface AuditResult {
  /**
   * Sorted: namespace, name, rule order, policy, message. Every finding, or with keepPerNamespace
   * the first that many of each namespace (the counts and the summary still count them all).
   */
  readonly violations: readonly AuditViolation[];
  /** Sorted like `violations`; as many per namespace as they. */
  readonly undecided: readonly UndecidedPod[];
  /** Every finding counted, by namespace, rule (in the rules' order) and policy. */
  readonly counts: readonly ViolationCount[];
  /** Pods judged that broke no rule, by namespace (sorted); an undecided pod is not among them. */
  readonly passed: readonly PassCount[];
  readonly summary: AuditSummary;
}

export interface AuditCollectorOptions {
  /**
   * Findings (and undecided pods) kept per namespace, the first in report order; default all.
   * The periodic audit keeps what a policy report shows (maxResultsPerReport).
   */
  readonly keepPerNamespace?: number;
}

/** Collects the pods' results as they come, page by page. */
export class AuditCollector {
  private violations: SmallestPerNamespace<AuditViolation>;
  private undecidedPods: SmallestPerNamespace<UndecidedPod>;
  private counts = new Map<string, { namespace: string; rule: AuditRuleName; policy?: string; count: number }>();
  private passed = new Map<string, number>();
  private audited = 0;
  private undecidedCount = 0;
  private skipped: Record<SkipReason, number> = { terminated: 0, mirror: 0, 'excluded-namespace': 0 };
  private readonly keep: number;

  constructor(options: AuditCollectorOptions = {}) {
    this.keep = options.keepPerNamespace ?? Infinity;
    this.violations = new SmallestPerNamespace(this.keep, compareViolations);
    this.undecidedPods = new SmallestPerNamespace(this.keep, compareUndecided);
  }

  /** One pod's result; `namespace` is the pod's, counted as passed when it broke no rule. */
  add(result: PodAudit, namespace?: string): void {
    if (result.violations === undefined) {
      this.skipped[result.skipped] += 1;
      return;
    }
    this.audited += 1;
    if (result.violations.length === 0 && namespace !== undefined) {
      // One entry per namespace, not per pod: bounded by the cluster's namespaces.
      this.passed.set(namespace, (this.passed.get(namespace) ?? 0) + 1);
    }
    for (const violation of result.violations) {
      this.keepAndCount(violation);
    }
  }

  /** Findings on objects other than pods (Nodes, NodePools: auditNodeSide, under namespace ''; ResourceClaims: auditClaim); no pod is counted. */
  addClusterFindings(violations: readonly AuditViolation[]): void {
    for (const violation of violations) {
      this.keepAndCount(violation);
    }
  }

  /**
   * What another collector gathered on objects other than pods (the DRA claims, whose list restarts
   * on its own after a 410 Gone, so they are gathered apart and added once their list is complete):
   * its findings as kept (bounded per namespace like these), their exact counts, and its undecided
   * objects; no pod is counted.
   */
  absorb(other: AuditCollector): void {
    for (const violation of other.violations.sorted()) this.violations.add(violation);
    for (const [key, entry] of other.counts) {
      const mine = this.counts.get(key);
      if (mine !== undefined) mine.count += entry.count;
      else this.counts.set(key, { ...entry });
    }
    for (const undecided of other.undecidedPods.sorted()) this.undecidedPods.add(undecided);
    this.undecidedCount += other.undecidedCount;
  }

  private keepAndCount(violation: AuditViolation): void {
    this.violations.add(violation);
    // NUL separates the parts: no namespace, rule or policy name holds one.
    const key = `${violation.namespace}\u0000${violation.rule}\u0000${violation.policy ?? ''}`;
    const entry = this.counts.get(key);
    if (entry !== undefined) entry.count += 1;
    else {
      const { namespace, rule, policy } = violation;
      this.counts.set(key, { namespace, rule, ...(policy === undefined ? {} : { policy }), count: 1 });
    }
  }

  addUndecided(pod: UndecidedPod): void {
    this.audited += 1;
    this.undecidedCount += 1;
    this.undecidedPods.add(pod);
  }

  /** Findings and undecided pods held right now: bounded per namespace when keepPerNamespace is set. */
  get heldCount(): number {
    return this.violations.heldCount + this.undecidedPods.heldCount;
  }

  /** Forgets everything: a list that restarts from the beginning (410 Gone) sees every pod again. */
  reset(): void {
    this.violations = new SmallestPerNamespace(this.keep, compareViolations);
    this.undecidedPods = new SmallestPerNamespace(this.keep, compareUndecided);
    this.counts = new Map();
    this.passed = new Map();
    this.audited = 0;
    this.undecidedCount = 0;
    this.skipped = { terminated: 0, mirror: 0, 'excluded-namespace': 0 };
  }

  result(): AuditResult {
    const counts = [...this.counts.values()].map((entry) => ({ ...entry })).sort(compareCounts);
    const byRule = Object.fromEntries(auditRuleNames.map((rule) => [rule, 0])) as Record<AuditRuleName, number>;
    for (const entry of counts) byRule[entry.rule] += entry.count;
    const byNamespace = new Map<string, { namespace: string; violations: number; passed: number }>();
    const namespaceEntry = (namespace: string): { namespace: string; violations: number; passed: number } => {
      let entry = byNamespace.get(namespace);
      if (entry === undefined) {
        entry = { namespace, violations: 0, passed: 0 };
        byNamespace.set(namespace, entry);
      }
      return entry;
    };
    for (const { namespace, count } of counts) namespaceEntry(namespace).violations += count;
    for (const [namespace, count] of this.passed) namespaceEntry(namespace).passed += count;
    return {
      violations: this.violations.sorted(),
      undecided: this.undecidedPods.sorted(),
      counts,
      passed: [...this.passed].map(([namespace, count]) => ({ namespace, count })).sort((a, b) => order(a.namespace, b.namespace)),
      summary: {
        audited: this.audited,
        skipped: { ...this.skipped },
        undecided: this.undecidedCount,
        byRule,
        byNamespace: [...byNamespace.values()].sort((a, b) => order(a.namespace, b.namespace)),
      },
    };
  }
}

function compareUndecided(a: UndecidedPod, b: UndecidedPod): number {
  return a.namespace === b.namespace ? order(a.name, b.name) : order(a.namespace, b.namespace);
}

function compareCounts(a: ViolationCount, b: ViolationCount): number {
  return (
    order(a.namespace, b.namespace) ||
    auditRuleNames.indexOf(a.rule) - auditRuleNames.indexOf(b.rule) ||
    order(a.policy ?? '', b.policy ?? '')
  );
}

function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `-o json`: the violations (or, grouped, the workloads' findings), the undecided pods and the counts. */
export function auditJson(result: AuditResult, workloads?: readonly WorkloadFinding[]): string {
  const findings = workloads === undefined ? { violations: result.violations } : { workloads };
  return `${JSON.stringify({ ...findings, undecided: result.undecided, summary: result.summary }, null, 2)}\n`;
}

/**
 * The default output: one row per violation, NAMESPACE NAME NODE RULE MESSAGE, columns padded as
 * `kubectl get` pads them; `<none>` for a pod bound to no node (a tenancy rule's message names its
 * policy). Nothing found: one line saying how many pods were audited.
 */
export function auditTable(result: AuditResult): string {
  const { summary } = result;
  // An undecided pod is counted as audited, yet no rule judged it: say so, or "No violations" would claim it is clean.
  const undecided = summary.undecided === 0 ? '' : `; ${summary.undecided} pods could not be judged (see stderr)`;
  if (result.violations.length === 0) {
    return `No violations in ${summary.audited} pods audited${undecided}.\n`;
  }
  const rows = result.violations.map((violation) => [
    namespaceCell(violation.namespace),
    violation.kind === undefined ? violation.name : `${violation.kind.toLowerCase()}/${violation.name}`,
    violation.node === '' ? '<none>' : violation.node,
    violation.rule,
    violation.message,
  ]);
  const pods = new Set(result.violations.filter((violation) => violation.kind === undefined).map((v) => `${v.namespace}/${v.name}`)).size;
  const clusterScoped = new Set(
    result.violations
      .filter((violation) => violation.kind === 'Node' || violation.kind === 'NodePool')
      .map((v) => `${v.kind ?? ''}/${v.name}`),
  ).size;
  const claims = new Set(result.violations.filter((violation) => violation.kind === 'ResourceClaim').map((v) => `${v.namespace}/${v.name}`))
    .size;
  const nodeSide =
    (clusterScoped === 0 ? '' : ` and ${clusterScoped} Nodes, NodePools or RuntimeClasses`) +
    (claims === 0 ? '' : ` and ${claims} ResourceClaims`);
  return `${padded(['NAMESPACE', 'NAME', 'NODE', 'RULE', 'MESSAGE'], rows)}\n${summaryTables(result)}\n${result.violations.length} violations in ${pods} of ${summary.audited} pods audited${nodeSide}${undecided}.\n`;
}

/**
 * `--group-by workload`: one row per workload and rule, NAMESPACE WORKLOAD PODS RULE MESSAGE (the
 * first pod's message, with its name), then the same summary as the pods' table.
 */
export function auditWorkloadTable(result: AuditResult, workloads: readonly WorkloadFinding[]): string {
  const { summary } = result;
  const undecided = summary.undecided === 0 ? '' : `; ${summary.undecided} pods could not be judged (see stderr)`;
  if (workloads.length === 0) return `No violations in ${summary.audited} pods audited${undecided}.\n`;
  const rows = workloads.map((finding) => [
    finding.namespace,
    `${finding.kind}/${finding.name}`,
    String(finding.pods),
    finding.rule,
    `${finding.message} (pod ${finding.examplePod})`,
  ]);
  const named = new Set(workloads.map((finding) => `${finding.namespace}/${finding.kind}/${finding.name}`)).size;
  return `${padded(['NAMESPACE', 'WORKLOAD', 'PODS', 'RULE', 'MESSAGE'], rows)}\n${summaryTables(result)}\n${result.violations.length} violations in ${named} workloads, of ${summary.audited} pods audited${undecided}.\n`;
}

/** The summary under a table: violations by rule (the rules that have any), then by namespace. */
export function summaryTables(result: AuditResult): string {
  const { summary } = result;
  const byRule = Object.entries(summary.byRule)
    .filter(([, count]) => count > 0)
    .map(([rule, count]) => [rule, String(count)]);
  const byNamespace = summary.byNamespace
    .filter((entry) => entry.violations > 0)
    .map((entry) => [namespaceCell(entry.namespace), String(entry.violations), String(entry.passed)]);
  return `\n${padded(['RULE', 'VIOLATIONS'], byRule)}\n\n${padded(['NAMESPACE', 'VIOLATIONS', 'PODS PASSED'], byNamespace)}\n`;
}

/** A namespace in a table; '' is the cluster-scoped Nodes and NodePools. */
function namespaceCell(namespace: string): string {
  return namespace === '' ? '<cluster>' : namespace;
}

/** Rows under a header, columns padded as `kubectl get` pads them (three spaces), every cell terminal-safe. */
function padded(header: readonly string[], rawRows: readonly (readonly string[])[]): string {
  const rows = rawRows.map((row) => row.map(terminalSafe));
  const widths = header.map((title, column) => rows.reduce((width, row) => Math.max(width, (row[column] ?? '').length), title.length));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('   ')
      .trimEnd();
  return [header, ...rows].map(line).join('\n');
}

/**
 * A table cell or a line for stderr, with its control characters (C0, DEL, C1) written as Go's
 * strconv.Quote writes them (`\n`, `\t`, `\x1b`, `\u009b`): the names and values in a finding come
 * from the pods, and a `--cluster-state` file is not validated by any API server, so a name may
 * hold an escape sequence that would recolour or clear the operator's terminal, or a newline that
 * would forge a row. One pass with a character class: linear, no backtracking.
 */
export function terminalSafe(text: string): string {
  return text.replace(controlCharacters, (character) => {
    const code = character.charCodeAt(0);
    if (code === 0x0a) return '\\n';
    if (code === 0x09) return '\\t';
    if (code === 0x0d) return '\\r';
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * Text of several lines for a terminal (`explain`, `simulate` and `test` print their reports
 * with it): each line as terminalSafe writes it, the line breaks kept.
 */
export function terminalLines(text: string): string {
  return text.split('\n').map(terminalSafe).join('\n');
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/g;

/** Violations counted by rule and namespace: the values of `tolerator_audit_violations`. */
export function violationCounts(result: AuditResult): { rule: AuditRuleName; namespace: string; count: number }[] {
  const counts = new Map<string, { rule: AuditRuleName; namespace: string; count: number }>();
  for (const { rule, namespace, count } of result.counts) {
    const key = `${rule}\u0000${namespace}`;
    const entry = counts.get(key);
    if (entry === undefined) counts.set(key, { rule, namespace, count });
    else entry.count += count;
  }
  return [...counts.values()];
}
