/**
 * Runs schedulingWarnings on one large scenario in a worker thread, so that a test can give it a
 * heap limit (Worker resourceLimits) and a deadline: memory a computation holds on to cannot be
 * bounded from inside the thread that holds it. Builds its inputs itself (they count against the
 * limit, as the parsed request does in the server), posts `{ ready: true }`, then `{ ms, warnings }`.
 *
 * Scenario (workerData): one required term whose single In requirement lists `values` values, none
 * of which any of the `nodes` nodes carries — every node is evaluated and explained.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Node, Pod } from '../../src/api/types.js';
import { schedulingWarnings } from '../../src/scheduling/scheduling-warnings.js';

export interface ValuesScenario {
  readonly values: number;
  readonly nodes: number;
}

function run({ values, nodes }: ValuesScenario): { ms: number; warnings: string[] } {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'topology.kubernetes.io/zone', operator: 'In', values: Array.from({ length: values }, (_, i) => `zone-${i}`) },
                ],
              },
            ],
          },
        },
      },
    },
  };
  const cluster: Node[] = Array.from({ length: nodes }, (_, i) => ({
    metadata: { name: `node-${i}`, labels: { 'topology.kubernetes.io/zone': `elsewhere-${i}`, 'kubernetes.io/hostname': `node-${i}` } },
    spec: {},
  }));
  const started = performance.now();
  const warnings = schedulingWarnings(pod, cluster, { TaintTolerationComparisonOperators: true });
  return { ms: performance.now() - started, warnings };
}

if (parentPort !== null) {
  const port = parentPort;
  port.postMessage({ ready: true });
  port.postMessage(run(workerData as ValuesScenario));
}
