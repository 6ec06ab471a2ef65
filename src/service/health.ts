// GET /api/health, for load balancers and monitoring: whether this instance reaches its database, and how many
// processing nodes answered lately. No credentials, and nothing more than counts.
import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { allNodes } from '../db/processingnodes.ts';
import type { Database } from '../db/schema.ts';
import { isOnline } from './refresher.ts';
import type { App } from './typed-app.ts';

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  database: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
  nodes: Type.Object({ online: Type.Integer(), total: Type.Integer() }),
});

export async function healthRoutes(app: App, { db }: { db: Kysely<Database> }) {
  app.get(
    '/api/health',
    {
      schema: {
        tags: ['health'],
        summary: 'Whether this instance can serve: its database and the processing nodes',
        security: [],
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      try {
        const nodes = await allNodes(db).select('last_refreshed').execute();
        const at = Date.now();
        return { status: 'ok' as const, database: 'ok' as const, nodes: { online: nodes.filter((node) => isOnline(node, at)).length, total: nodes.length } };
      } catch {
        return reply.code(503).send({ status: 'unavailable', database: 'unreachable', nodes: { online: 0, total: 0 } });
      }
    },
  );
}
