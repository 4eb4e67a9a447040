/**
 * Which pods the shipped webhook configurations send to tolerator at all: their namespaceSelector
 * (deploy/base/mutating-webhook.yaml and validating-webhook.yaml; the Helm chart's
 * `tolerator.webhookSelectors` with its default values). A pod in an excluded namespace is never
 * reviewed, so an offline command that says what tolerator would do to it must say instead that
 * tolerator never sees it. test/deploy/shipped-webhook-scope.test.ts holds these values equal to
 * the manifests.
 */

/** `kubernetes.io/metadata.name NotIn [...]`: what the cluster and tolerator need to recover. */
export const shippedExcludedNamespaces: readonly string[] = ['kube-system', 'kube-node-lease', 'tolerator-system'];

/** `<label> NotIn ["true"]`: a namespace opts out with this label set to "true". */
export const shippedOptOutLabel = 'tolerator.dev/ignore';

/**
 * Why the shipped webhooks never review a pod in `namespace` (with the namespace's `labels` when
 * they are known), or undefined when they do review it.
 */
export function notReviewedByShippedWebhooks(namespace: string, labels: Readonly<Record<string, string>> | undefined): string | undefined {
  if (shippedExcludedNamespaces.includes(namespace)) {
    return `the shipped webhook configurations exclude namespace ${namespace} (namespaceSelector kubernetes.io/metadata.name NotIn [${shippedExcludedNamespaces.join(', ')}])`;
  }
  if (labels?.[shippedOptOutLabel] === 'true') {
    return `namespace ${namespace} is labelled ${shippedOptOutLabel}=true, which the shipped webhook configurations' namespaceSelector excludes`;
  }
  return undefined;
}
