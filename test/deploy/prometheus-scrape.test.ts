// A real Prometheus (Debian's package) scrapes a running `tolerator serve` over TLS, verifying its
// certificate against the CA that signed it, and evaluates the shipped rules: a review tolerator
// cannot decide (a policy whose expression fails on the namespace) raises the shipped alert
// ToleratorUndecidedReviews from tolerator's own metrics, as it would in a cluster.
//
// Scrape and evaluation every second, so the whole test takes ~10 s: the alert has no `for`, and
// increase() needs one sample before the review and one after.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createCA, createServingCertificate } from '../support/certificates.js';
import { loadReviewFixture } from '../support/harness.js';
import { skipWithout, writeRuleFile } from '../support/prometheus-tools.js';
import { startServe, type ServedProcess } from '../support/serve-process.js';

const skip = skipWithout('promtool', 'prometheus');
// Every wait below polls until this deadline: a Prometheus that never scrapes or never fires fails
// here instead of hanging the suite.
const DEADLINE_MS = 45_000;

/** A port nothing listens on now, for Prometheus' --web.listen-address. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

interface PrometheusAnswer<T> {
  readonly status: string;
  readonly data: T;
}

async function prometheusApi<T>(port: number, path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  const answer = (await response.json()) as PrometheusAnswer<T>;
  assert.equal(answer.status, 'success');
  return answer.data;
}

/** One review over TLS, verified against the CA like Prometheus' scrape. */
function postReview(port: number, ca: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        servername: 'localhost',
        ca,
        path: '/validate',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve(res.statusCode ?? 0);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('a real Prometheus scraping a running tolerator over TLS', { skip }, () => {
  let dir: string;
  let ca: string;
  let tolerator: ServedProcess;
  let prometheus: ChildProcess;
  let prometheusPort: number;
  const prometheusLog: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-prometheus-'));
    const authority = await createCA();
    const serving = await createServingCertificate(authority, ['localhost']);
    ca = authority.cert;
    writeFileSync(join(dir, 'ca.crt'), authority.cert);
    writeFileSync(join(dir, 'tls.crt'), serving.cert);
    writeFileSync(join(dir, 'tls.key'), serving.key);
    // A policy whose group expression fails on a namespace without the label (no `?` optional
    // access): DedicatedNodes cannot decide, and the review is answered 500.
    mkdirSync(join(dir, 'policies'));
    writeFileSync(
      join(dir, 'policies', 'failing.yaml'),
      stringify({
        apiVersion: 'tolerator.dev/v1alpha1',
        kind: 'TenancyPolicy',
        metadata: { name: 'failing' },
        spec: {
          group: "namespaceObject.metadata.labels['dedicated']",
          taint: { key: 'dedicated', effect: 'NoSchedule' },
          nodeLabel: 'dedicated',
        },
      }),
    );
    writeFileSync(
      join(dir, 'cluster.yaml'),
      stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { 'kubernetes.io/metadata.name': 'shop' } } }],
      }),
    );
    tolerator = await startServe([
      '--tls-cert-file',
      join(dir, 'tls.crt'),
      '--tls-private-key-file',
      join(dir, 'tls.key'),
      '--policies',
      join(dir, 'policies'),
      '--cluster-state',
      join(dir, 'cluster.yaml'),
      '--shutdown-delay',
      '0',
    ]);

    const rules = writeRuleFile(dir);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [rules.file],
        scrape_configs: [
          {
            // The job name the shipped ServiceMonitor gives the targets, which the alerts select.
            job_name: 'tolerator',
            scheme: 'https',
            metrics_path: '/metrics',
            tls_config: { ca_file: join(dir, 'ca.crt'), server_name: 'localhost', insecure_skip_verify: false },
            static_configs: [{ targets: [`127.0.0.1:${tolerator.port}`] }],
          },
        ],
      }),
    );
    prometheusPort = await freePort();
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stderr?.on('data', (chunk: Buffer) => prometheusLog.push(chunk.toString('utf8')));
    await until('Prometheus to be ready', async () =>
      (await fetch(`http://127.0.0.1:${prometheusPort}/-/ready`)).status === 200 ? true : undefined,
    );
  });

  after(() => {
    // Whatever before() got to start, even when it failed half-way.
    (tolerator as typeof tolerator | undefined)?.child.kill('SIGKILL');
    (prometheus as ChildProcess | undefined)?.kill('SIGKILL');
    if ((dir as string | undefined) !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('scrapes tolerator’s /metrics over HTTPS, the certificate verified against its CA', async () => {
    type Targets = { activeTargets: { labels: { job: string }; health: string; lastError: string; scrapeUrl: string }[] };
    const target = await until('the target to be up', async () => {
      const { activeTargets } = await prometheusApi<Targets>(prometheusPort, '/api/v1/targets');
      return activeTargets.find((t) => t.labels.job === 'tolerator' && t.health === 'up');
    });
    assert.equal(target.lastError, '', prometheusLog.join(''));
    assert.equal(target.scrapeUrl, `https://127.0.0.1:${tolerator.port}/metrics`);
    // The counter is there at 0 before anything went wrong: increase() will see the step.
    type Vector = { result: { value: [number, string] }[] };
    const undecided = await until('a sample of tolerator_undecided_reviews_total', async () => {
      const { result } = await prometheusApi<Vector>(prometheusPort, '/api/v1/query?query=tolerator_undecided_reviews_total');
      return result[0];
    });
    assert.equal(undecided.value[1], '0');
  });

  it('fires the shipped alert ToleratorUndecidedReviews after a review tolerator could not decide', async () => {
    const review = loadReviewFixture('burstable-create-no-tolerations').review;
    assert.equal(await postReview(tolerator.port, ca, JSON.stringify(review)), 500);
    type Alerts = { alerts: { labels: Record<string, string>; state: string; annotations: Record<string, string> }[] };
    const alert = await until('ToleratorUndecidedReviews to fire', async () => {
      const { alerts } = await prometheusApi<Alerts>(prometheusPort, '/api/v1/alerts');
      return alerts.find((a) => a.labels.alertname === 'ToleratorUndecidedReviews' && a.state === 'firing');
    });
    assert.deepEqual(alert.labels, {
      alertname: 'ToleratorUndecidedReviews',
      instance: `127.0.0.1:${tolerator.port}`,
      job: 'tolerator',
      severity: 'warning',
    });
    assert.match(alert.annotations.description ?? '', /^Undecided reviews \(answered 500\) on 127\.0\.0\.1:\d+ in the last 5 minutes: \d/);
    // The replica is up and its certificate far from expiry: those alerts stay quiet.
    const { alerts } = await prometheusApi<Alerts>(prometheusPort, '/api/v1/alerts');
    assert.deepEqual(
      alerts.filter((a) => a.labels.alertname !== 'ToleratorUndecidedReviews').map((a) => `${a.labels.alertname} ${a.state}`),
      [],
    );
  });
});
