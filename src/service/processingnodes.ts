// Processing nodes at /api/processingnodes/: every signed-in user sees them (the token only admins);
// admins add, change and delete them. /api/processingnodes/options/ lists the options every online node has.
import { type Static, Type } from '@sinclair/typebox';
import { type Kysely, type SqlBool, sql } from 'kysely';
import { allNodes, deleteNode, insertNode, updateNode } from '../db/processingnodes.ts';
import type { Database, ProcessingNode } from '../db/schema.ts';
import type { NodeOption } from '../nodeclient/index.ts';
import { isAdmin } from './auth.ts';
import { fieldError } from './errors.ts';
import { type ResourceDefinition, registerResource } from './resource.ts';
import { type NodeRefresher, isOnline } from './refresher.ts';
import { Id, Nullable, Timestamp } from './schemas.ts';
import type { App } from './typed-app.ts';

const AvailableOption = Type.Object({
  name: Type.String(),
  type: Type.String({ description: 'int, float, string, bool or enum' }),
  value: Type.String({ description: 'The default, as a string' }),
  domain: Type.Unknown({ description: 'Allowed values: a text such as "positive integer", or the choices of an enum' }),
  help: Type.String(),
});

export const ProcessingNodeSchema = Type.Object(
  {
    id: Id,
    online: Type.Boolean({ description: 'Answered within the last 5 minutes' }),
    hostname: Type.String(),
    port: Type.Integer(),
    api_version: Type.String(),
    engine_version: Type.String(),
    engine: Type.String(),
    last_refreshed: Nullable(Timestamp),
    queue_count: Type.Integer(),
    max_images: Nullable(Type.Integer()),
    label: Type.String({ description: 'hostname:port' }),
    available_options: Type.Array(AvailableOption),
    token: Type.Optional(Type.String({ description: 'Shown to admins only' })),
  },
  { $id: 'ProcessingNode' },
);
type NodeItem = Static<typeof ProcessingNodeSchema>;

const NodeBody = Type.Object({
  hostname: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._:\\[\\]-]+$', description: 'Host name or IP address' }),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  token: Type.Optional(Type.String({ maxLength: 1024, description: "The node's token, sent as ?token=" })),
});

const label = (node: Pick<ProcessingNode, 'hostname' | 'port'>) => `${node.hostname}:${node.port}`;

/** A host name the node client can make a URL of, and that stays the host of that URL; a 400 on the field otherwise. */
function checkAddress(hostname: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(`http://${hostname}:1/`);
  } catch {
    parsed = undefined;
  }
  if (!parsed || parsed.hostname.toLowerCase() !== hostname.toLowerCase()) {
    throw fieldError('hostname', 'Enter a host name or an IP address (IPv6 in brackets).');
  }
}

/**
 * The options common to the given nodes, in the order of the first node that has any: a node without
 * options (not refreshed yet) does not empty the list.
 */
export function commonOptions(nodes: ProcessingNode[]): NodeOption[] {
  let common: NodeOption[] | undefined;
  for (const node of nodes) {
    const options = JSON.parse(node.available_options) as NodeOption[];
    if (options.length === 0) continue;
    const names = new Set(options.map((option) => option.name));
    common = common ? common.filter((option) => names.has(option.name)) : options;
  }
  return common ?? [];
}

function definition(refresher: NodeRefresher): ResourceDefinition<ProcessingNode, NodeItem, typeof NodeBody, typeof NodeBody> {
  return {
    path: '/api/processingnodes',
    table: 'processing_nodes',
    noun: 'processing node',
    plural: 'processing nodes',
    item: ProcessingNodeSchema,
    createBody: NodeBody,
    updateBody: NodeBody,
    adminOnly: 'writes',
    list: {
      paged: false,
      filters: {
        id: { kind: 'integer', column: 'processing_nodes.id' },
        hostname: { kind: 'string', column: 'processing_nodes.hostname' },
        port: { kind: 'integer', column: 'processing_nodes.port' },
        api_version: { kind: 'string', column: 'processing_nodes.api_version' },
        queue_count: { kind: 'integer', column: 'processing_nodes.queue_count' },
        max_images: { kind: 'integer', column: 'processing_nodes.max_images' },
        engine_version: { kind: 'string', column: 'processing_nodes.engine_version' },
        engine: { kind: 'string', column: 'processing_nodes.engine' },
        label: {
          kind: 'string',
          where: (value: string) =>
            sql<SqlBool>`(${sql.ref('processing_nodes.hostname')} || ':' || ${sql.ref('processing_nodes.port')}) = ${value}`,
        },
        has_available_options: {
          kind: 'boolean',
          where: (value: boolean) => sql<SqlBool>`${sql.ref('processing_nodes.available_options')} ${sql.raw(value ? '<>' : '=')} '[]'`,
        },
      },
      ordering: {
        id: 'processing_nodes.id',
        hostname: 'processing_nodes.hostname',
        port: 'processing_nodes.port',
        api_version: 'processing_nodes.api_version',
        queue_count: 'processing_nodes.queue_count',
        max_images: 'processing_nodes.max_images',
        engine_version: 'processing_nodes.engine_version',
        engine: 'processing_nodes.engine',
        last_refreshed: 'processing_nodes.last_refreshed',
      },
      defaultOrdering: ['id'],
    },
    scope: (ctx) => allNodes(ctx.db),
    present: async (ctx, rows) => {
      const admin = isAdmin(ctx.user);
      const at = Date.now();
      return rows.map((row) => ({
        id: row.id,
        online: isOnline(row, at),
        hostname: row.hostname,
        port: row.port,
        api_version: row.api_version,
        engine_version: row.engine_version,
        engine: row.engine,
        last_refreshed: row.last_refreshed,
        queue_count: row.queue_count,
        max_images: row.max_images,
        label: label(row),
        available_options: JSON.parse(row.available_options),
        ...(admin ? { token: row.token } : {}),
      }));
    },
    async create(ctx, body) {
      checkAddress(body.hostname);
      const id = await insertNode(ctx.db, { hostname: body.hostname, port: body.port, token: body.token ?? '' });
      refresher.refreshSoon(id);
      return id;
    },
    async update(ctx, node, body) {
      if (body.hostname !== undefined) checkAddress(body.hostname);
      // Only the writable fields: the body may carry others (read-only ones, or none of ours), never written.
      await updateNode(ctx.db, node.id, { hostname: body.hostname, port: body.port, token: body.token });
      refresher.refreshSoon(node.id);
    },
    remove: (ctx, node) => deleteNode(ctx.db, node.id),
  };
}

export async function processingNodeRoutes(app: App, { db, refresher }: { db: Kysely<Database>; refresher: NodeRefresher }) {
  app.get(
    '/api/processingnodes/options/',
    {
      schema: {
        tags: ['processing nodes'],
        summary: 'Options common to all online nodes',
        description: 'The intersection of the available_options of the online nodes; offer these when a task is assigned a node automatically.',
        response: { 200: Type.Array(AvailableOption), 403: Type.Ref('Error') },
      },
    },
    async () => {
      const nodes = await allNodes(db).orderBy('id').execute();
      const at = Date.now();
      return commonOptions(nodes.filter((node) => isOnline(node, at)));
    },
  );
  registerResource(app, db, definition(refresher));
}
