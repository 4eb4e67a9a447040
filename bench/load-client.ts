/**
 * The bench's side of the load generator: starts bench/load.ts pinned to the load core and runs
 * jobs on it one at a time, sampling the server's CPU time around the measured part.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { LoadJob, LoadMessage, LoadResult } from './protocol.js';
import { cpuSeconds, loadCore } from './servers.js';

export interface Measurement extends LoadResult {
  /** Server CPU seconds per request, in microseconds. */
  readonly serverCpuUsPerRequest: number;
  /** Share of one core the server used while measured (1 = saturated). */
  readonly serverBusy: number;
}

export interface MeasureHooks {
  /** Called when the measured part starts (after the warm-up). */
  readonly onMeasuring?: () => void;
}

export class LoadGenerator {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, (message: LoadMessage) => void>();
  private nextId = 1;

  constructor(cwd: string) {
    this.child = spawn('taskset', ['-c', loadCore, process.execPath, '--import', 'tsx', 'bench/load.ts'], {
      cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      process.stderr.write(`[load] ${chunk}`);
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const message = JSON.parse(line) as LoadMessage;
      this.waiting.get(message.id)?.(message);
    });
  }

  /** Runs one job against the server with process id `serverPid`. */
  measure(serverPid: number, job: Omit<LoadJob, 'id'>, hooks: MeasureHooks = {}): Promise<Measurement> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let cpuStart = 0;
      let wallStart = 0;
      this.waiting.set(id, (message) => {
        if (message.type === 'measuring') {
          cpuStart = cpuSeconds(serverPid);
          wallStart = performance.now();
          hooks.onMeasuring?.();
          return;
        }
        this.waiting.delete(id);
        if (message.type === 'error') {
          reject(new Error(`load generator: ${message.message}`));
          return;
        }
        const cpu = cpuSeconds(serverPid) - cpuStart;
        const wall = (performance.now() - wallStart) / 1000;
        if (message.errors > 0 || message.non2xx > 0) {
          reject(
            new Error(
              `${message.errors} errors (${message.timeouts} timeouts) and ${message.non2xx} non-2xx answers under load: ${JSON.stringify(job.requests.map((r) => r.path))}`,
            ),
          );
          return;
        }
        resolve({ ...message, serverCpuUsPerRequest: (cpu / message.requests) * 1e6, serverBusy: cpu / wall });
      });
      this.child.stdin.write(`${JSON.stringify({ ...job, id })}\n`);
    });
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) =>
      this.child.once('exit', () => {
        resolve();
      }),
    );
    this.child.stdin.end();
    await exited;
  }
}
