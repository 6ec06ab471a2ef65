// The processing node that `aeromap serve` runs in the same process, on a port of its own, so that a fresh install
// processes images with nothing else to set up. The service reaches it like any other node: over the NodeODM API,
// on loopback, with a token made anew at every start.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ServiceConfig } from '../config.ts';
import { allNodes, insertNode, updateNode } from '../db/processingnodes.ts';
import type { Database } from '../db/schema.ts';
import { type RunningNode, startNode } from '../node/server.ts';
import type { NodeRefresher } from './refresher.ts';

const LOOPBACK = '127.0.0.1';

/** Starts the embedded node and records it as a processing node (once: later starts update the record). */
export async function startEmbeddedNode(
  settings: NonNullable<ServiceConfig['embeddedNode']>,
  db: Kysely<Database>,
  refresher: NodeRefresher,
  log: (message: string) => void,
): Promise<{ node: RunningNode; id: number }> {
  const token = randomBytes(24).toString('base64url');
  const node = await startNode({ dataDir: settings.dataDir, port: settings.port, host: LOOPBACK, token, log });
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
    return { node, id };
  } catch (error) {
    await node.close();
    throw error;
  }
}
