// Keeps what the service knows about its processing nodes current: every interval it asks each node for
// /info and /options and stores the answers with the time. A node that does not answer keeps its old
// figures and goes offline once its last refresh is older than the online window.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { takeLease } from '../db/leases.ts';
import { allNodes, findNode, updateNode } from '../db/processingnodes.ts';
import { type Database, type ProcessingNode, now } from '../db/schema.ts';
import { NodeClient, NodeError } from '../nodeclient/index.ts';

export const ONLINE_WINDOW_MS = 5 * 60 * 1000;

export function isOnline(node: Pick<ProcessingNode, 'last_refreshed'>, at = Date.now()): boolean {
  return node.last_refreshed !== null && at - Date.parse(node.last_refreshed) <= ONLINE_WINDOW_MS;
}

export interface RefresherOptions {
  intervalMs: number;
  timeoutMs: number;
}

/** The lease through which one instance among several on a database refreshes the nodes. */
const LEASE = 'node-refresher';

export class NodeRefresher {
  private readonly instanceId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Whether each node answered last time, so that a node going away is logged once, not every interval. */
  private readonly reachable = new Map<number, boolean>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: FastifyBaseLogger,
    private readonly options: RefresherOptions,
  ) {}

  /** Refreshes every node now and then every interval, until stop(): while this instance holds the refresher's
   * lease, so that among several instances on one database one refreshes at a time. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  async refreshAll(): Promise<void> {
    const nodes = await this.track(allNodes(this.db).execute());
    await Promise.all(nodes.map((node) => this.refresh(node)));
  }

  /** Refreshes one node in the background, e.g. right after it was added or changed. */
  refreshSoon(id: number): void {
    if (this.stopped) return;
    this.track(findNode(this.db, id).then((node) => node && this.refresh(node))).catch((error) =>
      this.log.error({ err: error }, 'processing node refresh failed'),
    );
  }

  /** refreshAll when this instance holds the refresher's lease, which outlasts two intervals. */
  private async refreshRound(): Promise<void> {
    if (await takeLease(this.db, LEASE, this.instanceId, 2 * this.options.intervalMs)) await this.refreshAll();
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.track(this.refreshRound())
        .catch((error) => this.log.error({ err: error }, 'processing node refresh failed'))
        .finally(() => {
          if (!this.stopped) this.schedule(this.options.intervalMs);
        });
    }, delayMs);
    // The refresher alone must not keep the process alive.
    this.timer.unref();
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    work.then(
      () => this.inFlight.delete(work),
      () => this.inFlight.delete(work),
    );
    return work;
  }

  /** Asks one node for /info and /options and stores the answers; a node that fails is logged and skipped. */
  private async refresh(node: ProcessingNode): Promise<void> {
    const client = new NodeClient(node, { quickTimeoutMs: this.options.timeoutMs });
    try {
      const [info, options] = await Promise.all([client.info(), client.options()]);
      await updateNode(this.db, node.id, {
        api_version: info.version,
        engine: info.engine ?? 'odm',
        engine_version: info.engineVersion ?? info.odmVersion ?? '',
        queue_count: info.taskQueueCount,
        max_images: info.maxImages ?? null,
        available_options: JSON.stringify(options),
        last_refreshed: now(),
      });
      if (this.reachable.get(node.id) === false) this.log.info(`processing node ${client.label} is back`);
      this.reachable.set(node.id, true);
    } catch (error) {
      if (!(error instanceof NodeError)) throw error;
      if (this.reachable.get(node.id) !== false) this.log.warn(`processing node ${client.label}: ${error.message}`);
      this.reachable.set(node.id, false);
    }
  }
}
