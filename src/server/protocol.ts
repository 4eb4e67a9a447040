/**
 * The messages between the review pool (src/server/review-pool.ts, main thread) and a review
 * worker (src/server/review-worker.ts). Everything is data a structured clone carries: the
 * settings, the policy files' texts, nodes, the body (moved, not copied), the answer's text.
 */
import type { AdmissionErrorCode } from '../admission/errors.js';
import type { WebhookSide } from '../admission/pipeline.js';
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import type { Namespace, Node, RuntimeClass } from '../api/types.js';
import type { AdmissionSettings } from '../admission/pipeline-settings.js';
import type { ReviewSummary } from '../admission/run-review.js';
import type { PolicySource } from '../tenancy/policy-set.js';
import type { NodeDelta } from './node-mirror.js';

/** `workerData`: what a worker builds its pipeline from. */
export interface WorkerSetup {
  readonly settings: AdmissionSettings;
  /** Whether the main thread's cluster state holds the cluster's nodes (ClusterFacts.knowsNodes). */
  readonly knowsNodes: boolean;
}

export type ToWorker =
  /** The policy set to decide with from now on: the texts it was built from; undefined: no policies. */
  | { readonly type: 'policies'; readonly sources: readonly PolicySource[] | undefined }
  | ({ readonly type: 'nodes' } & NodeDelta)
  | {
      readonly type: 'review';
      readonly id: number;
      readonly side: WebhookSide;
      readonly body: Uint8Array;
      /** The gates of this review, read once on the main thread as the pipeline reads them there. */
      readonly gates: FeatureGates;
      /** The version the API server reported when the gates were read (PluginContext.serverVersion). */
      readonly serverVersion: KubernetesVersion | undefined;
    }
  /** The answer to a `facts` question: the object, or undefined when it does not exist, or why it could not be read. */
  | { readonly type: 'facts'; readonly id: number; readonly value: Namespace | Node | RuntimeClass | undefined; readonly error?: string };

export type FromWorker =
  | { readonly type: 'ready' }
  /** The policies it was sent did not build (they built on the main thread, so this is a bug): it decides nothing until the next set. */
  | { readonly type: 'policies-failed'; readonly message: string }
  /** A cluster fact only the main thread can read (its informers, or a live read on a miss). */
  | { readonly type: 'facts'; readonly id: number; readonly query: 'namespace' | 'node' | 'runtimeclass'; readonly name: string }
  | { readonly type: 'answer'; readonly id: number; readonly payload: string; readonly summary: ReviewSummary }
  /** The body was refused: an AdmissionError, rebuilt on the main thread from its code and message. */
  | { readonly type: 'refused'; readonly id: number; readonly code: AdmissionErrorCode; readonly message: string }
  /** Anything else thrown while deciding: could not decide. The text is for the log only. */
  | { readonly type: 'failed'; readonly id: number; readonly error: string };
