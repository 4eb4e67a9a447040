/**
 * `tolerator delete-webhooks --name NAME`: deletes the MutatingWebhookConfiguration and the
 * ValidatingWebhookConfiguration NAME. The Helm chart's pre-delete hook runs it (as Gatekeeper's
 * chart deletes its webhooks before anything else): `helm uninstall` would otherwise delete the
 * Deployment first, and the validating webhook (failurePolicy Fail) would refuse every pod of the
 * reviewed namespaces for as long as it outlived the replicas that answer it. It runs from
 * tolerator's own image, so the hook needs no other image to be pulled (nor a registry the cluster
 * may not reach). A configuration already gone is not an error: a hook retried after a partial
 * run must succeed.
 */
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';

const deleteWebhooksFlags = {
  name: { kind: 'string', placeholder: 'NAME', help: 'the MutatingWebhookConfiguration and ValidatingWebhookConfiguration to delete' },
  kubeconfig: { kind: 'string', placeholder: 'FILE', help: 'the cluster (default: the in-cluster service account)' },
} as const satisfies Record<string, FlagSpec>;

export const deleteWebhooksCommand: CommandDefinition = {
  name: 'delete-webhooks',
  summary: "deletes the webhook configurations NAME (the Helm chart's pre-delete hook)",
  flags: deleteWebhooksFlags,
  outcomes: { ok: 'both are gone', found: 'a deletion failed (its line says why)' },
  run: deleteWebhooks,
};

async function deleteWebhooks(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const name = flags.values.get('name') as string | undefined;
  if (name === undefined || name === '') throw new UsageError('delete-webhooks needs --name NAME');
  if (flags.positionals.length > 0) throw new UsageError(`delete-webhooks takes no arguments, got ${flags.positionals.join(' ')}`);
  const { loadKubeConfig } = await import('../kube/kube-config.js');
  const { createApiRequest } = await import('../kube/api-requests.js');
  const kubeConfig = loadKubeConfig({ kubeconfigPath: flags.values.get('kubeconfig') as string | undefined, env: io.env ?? {} });
  if (kubeConfig === undefined)
    throw new UsageError('delete-webhooks needs a cluster: --kubeconfig FILE, or an in-cluster service account');
  const request = createApiRequest(kubeConfig);
  let failed = false;
  for (const resource of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations']) {
    // The validating one first: it is the one that refuses pods while nobody answers.
    const answer = await request('DELETE', `/apis/admissionregistration.k8s.io/v1/${resource}/${encodeURIComponent(name)}`);
    if (answer.status === 200 || answer.status === 202) {
      io.stdout(`${resource}/${name} deleted\n`);
    } else if (answer.status === 404) {
      io.stdout(`${resource}/${name} already gone\n`);
    } else {
      failed = true;
      const message = (answer.body as { message?: unknown } | undefined)?.message;
      io.stderr(`${resource}/${name}: HTTP ${answer.status}${typeof message === 'string' ? `: ${message}` : ''}\n`);
    }
  }
  return failed ? 1 : 0;
}
