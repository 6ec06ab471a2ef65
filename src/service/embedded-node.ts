// The processing node that `aeromap serve` runs beside itself, so that a fresh install processes images with
// nothing else to set up. It is `aeromap node` in a child process, so that a busy task (console writes, its
// store, all.zip) never holds up the API's event loop. The service reaches it like any other node: over the
// NodeODM API, on loopback, with a token made anew at every start (passed in the environment, not on the command
// line that `ps` shows). The child stops when the service goes, even when the service is killed (its IPC channel
// closes), and is started again when it dies on its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import type { ServiceConfig } from './config.ts';
import { allNodes, insertNode, updateNode } from '../db/processingnodes.ts';
import type { Database } from '../db/schema.ts';
import { FOLDER_IN_USE_EXIT_CODE, type NodeReady } from '../protocol/node-child.ts';
import { nodeEnvironment } from '../protocol/environment.ts';
import type { NodeRefresher } from './refresher.ts';

const LOOPBACK = '127.0.0.1';
/** How long a start waits for a node that is still going away (a killed service's child) to free the folder. */
const FOLDER_WAIT_MS = 30_000;
const STOP_GRACE_MS = 15_000;
const RESTART_DELAYS_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
/** A child that ran this long before it died starts again after the shortest delay. */
const STABLE_MS = 60_000;

export interface EmbeddedNode {
  url: string;
  port: number;
  /** The child's process id (it changes when the child is started again). */
  readonly pid: number | undefined;
  close(): Promise<void>;
}

/** The same entry point that runs this service: the build's JavaScript, or the sources through tsx. */
function nodeCommand(): string[] {
  const source = import.meta.url.endsWith('.ts');
  const cli = fileURLToPath(new URL(source ? '../cli.ts' : '../cli.js', import.meta.url));
  const loader = source ? ['--import', createRequire(import.meta.url).resolve('tsx/esm')] : [];
  return [...loader, cli, 'node'];
}

class NodeExited extends Error {
  constructor(readonly code: number | null, detail: string) {
    super(detail);
  }
}

/** Forwards the child's output to the log, keeping its last line for the reason of a failed start. */
function relayOutput(child: ChildProcess, log: (message: string) => void): () => string | undefined {
  let last: string | undefined;
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line: string) => {
      if (!line.trim()) return;
      last = line;
      log(line);
    });
  }
  return () => last;
}

/** Resolves with the port once the child listens; rejects with its last words if it exits first. */
function whenListening(child: ChildProcess, lastLine: () => string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: NodeReady) => resolve(message.listening));
    child.once('error', (error) => reject(new NodeExited(null, error.message)));
    child.once('exit', (code, signal) => {
      // Its output may still be on its way when it exits.
      setImmediate(() => reject(new NodeExited(code, lastLine()?.replace(/^aeromap node: /, '') ?? `exited (${signal ?? code})`)));
    });
  });
}

class NodeSupervisor implements EmbeddedNode {
  url = '';
  port: number;
  private child: ChildProcess | undefined;
  private closing = false;
  private restarts = 0;
  /** Called each time the child listens again after dying. */
  onRestarted: () => void = () => {};

  constructor(
    private readonly settings: NonNullable<ServiceConfig['embeddedNode']>,
    private readonly token: string,
    private readonly log: (message: string) => void,
  ) {
    this.port = settings.port;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the child; a folder still held by a node on its way out is waited for, any other failure thrown. */
  async start(): Promise<void> {
    const until = Date.now() + FOLDER_WAIT_MS;
    for (;;) {
      try {
        this.port = await this.launch();
        this.url = `http://${LOOPBACK}:${this.port}`;
        return;
      } catch (error) {
        if (!(error instanceof NodeExited && error.code === FOLDER_IN_USE_EXIT_CODE) || Date.now() > until) throw error;
        await sleep(250);
      }
    }
  }

  private async launch(): Promise<number> {
    const { dataDir, maxRuntimeMinutes } = this.settings;
    const limits = maxRuntimeMinutes ? ['--max-runtime', String(maxRuntimeMinutes)] : [];
    const args = [...nodeCommand(), '--port', String(this.port), '--host', LOOPBACK, '--data-dir', dataDir, ...limits];
    const child = spawn(process.execPath, args, {
      env: { ...nodeEnvironment(), AEROMAP_NODE_TOKEN: this.token },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    const port = await whenListening(child, relayOutput(child, this.log));
    const startedAt = Date.now();
    child.once('exit', (code, signal) => {
      if (this.closing || this.child !== child) return;
      if (Date.now() - startedAt > STABLE_MS) this.restarts = 0;
      void this.restart(`exited (${signal ?? `code ${code}`})`);
    });
    return port;
  }

  private async restart(why: string): Promise<void> {
    const delay = RESTART_DELAYS_MS[Math.min(this.restarts++, RESTART_DELAYS_MS.length - 1)];
    this.log(`The embedded processing node ${why}; starting it again in ${delay / 1000} s`);
    await sleep(delay);
    if (this.closing) return;
    try {
      await this.start();
    } catch (error) {
      if (!this.closing) await this.restart(`could not start (${(error as Error).message})`);
      return;
    }
    this.onRestarted();
  }

  async close(): Promise<void> {
    this.closing = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }
}

/** Starts the embedded node and records it as a processing node (once: later starts update the record). */
export async function startEmbeddedNode(
  settings: NonNullable<ServiceConfig['embeddedNode']>,
  db: Kysely<Database>,
  refresher: NodeRefresher,
  log: (message: string) => void,
): Promise<{ node: EmbeddedNode; id: number }> {
  const token = randomBytes(24).toString('base64url');
  const node = new NodeSupervisor(settings, token, log);
  await node.start();
  try {
    const existing = await allNodes(db)
      .where('hostname', '=', LOOPBACK)
      .where('port', '=', node.port)
      .executeTakeFirst();
    let id: number;
    if (existing) {
      id = existing.id;
      await updateNode(db, id, { token });
    } else {
      id = await insertNode(db, { hostname: LOOPBACK, port: node.port, token });
    }
    refresher.refreshSoon(id);
    node.onRestarted = () => refresher.refreshSoon(id);
    return { node, id };
  } catch (error) {
    await node.close();
    throw error;
  }
}
