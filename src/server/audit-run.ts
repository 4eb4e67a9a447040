/**
 * One audit over a source of pods, page by page: each pod's Namespace and Node are read from the
 * cluster facts, the pure rules (src/audit/audit-rules.ts) judge it, the collector keeps the
 * findings. Shared by `tolerator audit` (a file, or the cluster) and the periodic audit of
 * `tolerator serve`, so both find the same things.
 *
 * A stored pod the API server sent always has the shape of a Pod; a file may hold anything. Each
 * pod's JSON types are checked as an admission request's are (src/admission/object-shape.ts), and
 * a pod that fails the check, or whose namespace a policy cannot be evaluated for, is counted as
 * undecided with the reason rather than judged on fields of the wrong type.
 */
import { checkObjectShape } from '../admission/object-shape.js';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import { auditClaim, auditPod, type AuditRuleName, type AuditSettings, type AuditViolation } from '../audit/audit-rules.js';
import { AuditCollector, type AuditResult, type UndecidedPod } from '../audit/audit-summary.js';
import type { Namespace, Node, Pod } from '../api/types.js';
import { isJsonObject } from '../api/types.js';
import type { SkippedItem } from '../kube/paged-list.js';
import { PolicyEvaluationError } from '../tenancy/policy-set.js';

/**
 * Where the pods come from: every page in order, a restart when the list starts over, and each pod
 * too large to be read at all (src/kube/paged-list.ts), which the run counts as undecided.
 */
export type PodPages = (handlers: {
  readonly onPage: (pods: readonly unknown[]) => Promise<void>;
  readonly onRestart: () => void;
  readonly onSkipped: (pod: SkippedItem) => void;
}) => Promise<void>;

export interface AuditRunOptions {
  /**
   * Called between pods; when it resolves to true the run pauses for the event loop first. The
   * server passes a time budget (reviews keep priority); the command passes nothing.
   */
  readonly shouldYield?: () => boolean;
  readonly yieldNow?: () => Promise<void>;
  /** Findings kept per namespace (AuditCollectorOptions); the command keeps all, the server what its reports show. */
  readonly keepPerNamespace?: number;
  /** `tolerator audit --rule`: only these rules' findings are kept; a pod breaking none of them passes. */
  readonly rules?: ReadonlySet<AuditRuleName>;
  /** Called for each pod with findings (after `rules`), with them: `--group-by workload` keeps its owner. */
  readonly onFindings?: (pod: Pod, violations: readonly AuditViolation[]) => void;
  /** Findings on the cluster's Nodes and NodePools (auditNodeSide), added to the pods' (after `rules`). */
  readonly clusterFindings?: readonly AuditViolation[];
  /**
   * The DRA ResourceClaims, page by page after the pods (the periodic audit's list), each judged by
   * auditClaim against its Namespace as it is now and forgotten: only the findings are kept, as
   * for the pods. A claim too large to read, or whose namespace a policy cannot be evaluated for,
   * is undecided (with `kind: 'ResourceClaim'`) but counts as no pod audited.
   */
  readonly claimPages?: PodPages;
}

export async function runAudit(
  pages: PodPages,
  facts: Pick<ClusterFacts, 'getNamespace' | 'readNode' | 'knowsNodes'>,
  settings: AuditSettings,
  options: AuditRunOptions = {},
): Promise<AuditResult> {
  const collector = new AuditCollector({ keepPerNamespace: options.keepPerNamespace });
  // Looked up once per name and run: a namespace's pods are many, and the informers' live read
  // on a miss must not be repeated for each of them.
  const namespaces = new Map<string, Promise<Namespace | undefined>>();
  const nodes = new Map<string, Promise<Node | undefined>>();
  const namespaceOf = (name: string): Promise<Namespace | undefined> => {
    let found = namespaces.get(name);
    if (found === undefined) {
      found = facts.getNamespace(name);
      namespaces.set(name, found);
    }
    return found;
  };
  const nodeOf = (name: string): Promise<Node | undefined> => {
    let found = nodes.get(name);
    if (found === undefined) {
      found = facts.readNode(name);
      nodes.set(name, found);
    }
    return found;
  };

  await pages({
    onRestart: () => {
      collector.reset();
    },
    // Judged by nobody: an undecided pod, named and counted, while the run goes on with the others.
    onSkipped: (pod) => {
      collector.addUndecided(tooLargeToRead('pod', pod));
    },
    onPage: (items) =>
      eachItem(items, options, async (item, namespace, name) => {
        try {
          checkObjectShape('', 'Pod', item, `pod "${namespace}/${name}"`);
        } catch (error) {
          collector.addUndecided({ namespace, name, message: error instanceof Error ? error.message : String(error) });
          return;
        }
        const pod = item as Pod;
        const nodeName = pod.spec?.nodeName ?? '';
        const [namespaceObject, node] = await Promise.all([
          namespaceOf(namespace),
          nodeName === '' || !facts.knowsNodes ? undefined : nodeOf(nodeName),
        ]);
        try {
          const judged = auditPod(pod, { namespace: namespaceObject, node, nodesKnown: facts.knowsNodes }, settings);
          const { rules } = options;
          const kept =
            rules === undefined || judged.violations === undefined
              ? judged
              : { violations: judged.violations.filter((violation) => rules.has(violation.rule)) };
          collector.add(kept, namespace);
          if (kept.violations !== undefined && kept.violations.length > 0) options.onFindings?.(pod, kept.violations);
        } catch (error) {
          if (!(error instanceof PolicyEvaluationError)) throw error;
          collector.addUndecided({ namespace, name, message: error.message });
        }
      }),
  });
  const { rules } = options;
  const kept = (violations: readonly AuditViolation[]): readonly AuditViolation[] =>
    rules === undefined ? violations : violations.filter((violation) => rules.has(violation.rule));
  collector.addClusterFindings(kept(options.clusterFindings ?? []));
  if (options.claimPages !== undefined) {
    // Gathered apart: a restart of the claims' list forgets its claims, not the pods judged before it.
    let claims = new AuditCollector({ keepPerNamespace: options.keepPerNamespace });
    await options.claimPages({
      onRestart: () => {
        claims = new AuditCollector({ keepPerNamespace: options.keepPerNamespace });
      },
      onSkipped: (claim) => {
        claims.addUndecided(tooLargeToRead('resourceclaim', claim));
      },
      onPage: (items) =>
        eachItem(items, options, async (claim, namespace, name) => {
          try {
            claims.addClusterFindings(kept(auditClaim(claim, namespace === '' ? undefined : await namespaceOf(namespace), settings)));
          } catch (error) {
            if (!(error instanceof PolicyEvaluationError)) throw error;
            claims.addUndecided({ namespace, name, kind: 'ResourceClaim', message: error.message });
          }
        }),
    });
    collector.absorb(claims);
  }
  return collector.result();
}

/**
 * Each item of a page with its namespace and name ('' where it has none), in order, the run
 * yielding to the event loop first whenever its budget says so.
 */
async function eachItem(
  items: readonly unknown[],
  options: Pick<AuditRunOptions, 'shouldYield' | 'yieldNow'>,
  judge: (item: unknown, namespace: string, name: string) => Promise<void>,
): Promise<void> {
  for (let index = 0; index < items.length; index++) {
    if (options.shouldYield?.() === true) await options.yieldNow?.();
    const item = items[index];
    const metadata = isJsonObject(item) && isJsonObject(item.metadata) ? item.metadata : {};
    await judge(
      item,
      typeof metadata.namespace === 'string' ? metadata.namespace : '',
      typeof metadata.name === 'string' ? metadata.name : '',
    );
  }
}

/** An object the list stepped over (src/kube/paged-list.ts): undecided, named. */
function tooLargeToRead(resource: 'pod' | 'resourceclaim', { namespace, name, maxBytes }: SkippedItem): UndecidedPod {
  return {
    namespace,
    name,
    ...(resource === 'pod' ? {} : { kind: 'ResourceClaim' as const }),
    message: `${resource} "${namespace}/${name}" is more than ${maxBytes} bytes of JSON as the API server sends it, the most one object can be: it was not read, and not judged`,
  };
}

/** The pods of a file as one page. */
export function podsAsOnePage(pods: readonly unknown[]): PodPages {
  return async ({ onPage }) => {
    await onPage(pods);
  };
}
