// The CRUD routes every resource of the API shares: list (filtered, ordered, paged or not), create (201),
// retrieve, replace (PUT), update (PATCH), delete (204). A resource supplies its schemas, its visible rows
// and its rules; what is not visible to the caller is a 404, so ids do not leak.
import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { type Kysely, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { Database } from '../db/schema.ts';
import { type Principal, currentUser, requireAdmin } from './auth.ts';
import { notFound } from './errors.ts';
import {
  type ListQuery,
  type ListSpec,
  applyFilters,
  applyOrdering,
  countRows,
  countedPage,
  dropEmptyQueryParameters,
  listQuerySchema,
  orderingTerms,
} from './listing.ts';
import { PageOf, pageWindow, requestedPage } from './pagination.ts';
import { IdParams, ref } from './schemas.ts';
import type { App } from './typed-app.ts';

export interface Context {
  db: Kysely<Database>;
  user: Principal;
  request: FastifyRequest;
}

export interface ResourceDefinition<Row extends { id: number }, Item, Create extends TObject, Update extends TObject> {
  /** The collection's path without its trailing slash, e.g. /api/projects. */
  path: string;
  /** The table the rows come from; its id column identifies an item. */
  table: keyof Database;
  noun: string;
  plural: string;
  /** The item's response schema; it carries an $id and is registered with app.addSchema. */
  item: TSchema;
  createBody: Create;
  /** The PUT body; PATCH takes any subset of it. */
  updateBody: Update;
  /** "all": every route is for admins; "writes": create, update and delete are. */
  adminOnly?: 'all' | 'writes';
  /** More item paths that take PATCH, with :id (the spec's /presets/{id}/). */
  patchAliases?: string[];
  list: ListSpec;
  /** The rows the caller may see. */
  scope(ctx: Context): SelectQueryBuilder<Database, any, Row>;
  present(ctx: Context, rows: Row[]): Promise<Item[]>;
  /** Creates the item and answers its id. */
  create(ctx: Context, body: Static<Create>): Promise<number>;
  update(ctx: Context, row: Row, body: Partial<Static<Update>>): Promise<void>;
  remove(ctx: Context, row: Row): Promise<void>;
}

export function contextOf(db: Kysely<Database>, request: FastifyRequest): Context {
  return { db, user: currentUser(request), request };
}

/** The visible row with this id, or a 404. */
export async function loadVisible<Row extends { id: number }>(
  def: Pick<ResourceDefinition<Row, unknown, TObject, TObject>, 'scope' | 'table'>,
  ctx: Context,
  id: number,
): Promise<Row> {
  const row = await def
    .scope(ctx)
    .where(sql<SqlBool>`${sql.ref(`${def.table}.id`)} = ${id}`)
    .executeTakeFirst();
  if (!row) throw notFound();
  return row as Row;
}

/**
 * The PATCH body: every field optional and without its default, so that a field left out keeps its value
 * instead of being reset to the default by the validator.
 */
function patchBody<T extends TObject>(schema: T) {
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([name, property]) => {
      const { default: _unused, ...rest } = property as TSchema;
      return [name, Type.Optional(rest as TSchema)];
    }),
  );
  return Type.Unsafe<Partial<Static<T>>>(Type.Object(properties, { description: 'Any subset of the fields' }));
}

const errorReplies = { 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') };

export function registerResource<Row extends { id: number }, Item, Create extends TObject, Update extends TObject>(
  app: App,
  db: Kysely<Database>,
  def: ResourceDefinition<Row, Item, Create, Update>,
): void {
  const item = ref(def.item);
  const tags = [def.plural];
  const guard = (write: boolean) =>
    def.adminOnly === 'all' || (def.adminOnly === 'writes' && write) ? { onRequest: requireAdmin } : {};
  const collectionPath = `${def.path}/`;
  const itemPath = `${def.path}/:id/`;

  const presentOne = async (ctx: Context, id: number) => (await def.present(ctx, [await loadVisible(def, ctx, id)]))[0];

  app.get(
    collectionPath,
    {
      ...guard(false),
      preValidation: dropEmptyQueryParameters,
      schema: {
        tags,
        summary: `List ${def.plural}`,
        querystring: listQuerySchema(def.list),
        response: { 200: def.list.paged ? PageOf(item) : Type.Array(item), ...errorReplies },
      },
    },
    async (request) => {
      const ctx = contextOf(db, request);
      const query = request.query as ListQuery;
      const terms = orderingTerms(def.list, query.ordering);
      const filtered = applyFilters(def.scope(ctx), def.list, query);
      if (!def.list.paged) return def.present(ctx, await applyOrdering(filtered, terms).execute());
      // A page asked for by number comes with the count; the last page, and a page without rows, need it first.
      const early = requestedPage(query);
      const counted = early && (await countedPage(filtered, terms, early.offset, early.limit));
      const count = counted ? counted.count : await countRows(filtered);
      const page = pageWindow(request, count, query);
      const rows =
        counted?.rows ?? (count === 0 ? [] : await applyOrdering(filtered, terms).offset(page.offset).limit(page.limit).execute());
      return { count, next: page.next, previous: page.previous, results: await def.present(ctx, rows) };
    },
  );

  app.post(
    collectionPath,
    {
      ...guard(true),
      schema: { tags, summary: `Create a ${def.noun}`, body: def.createBody, response: { 201: item, ...errorReplies } },
    },
    async (request, reply) => {
      const ctx = contextOf(db, request);
      const id = await def.create(ctx, request.body as Static<Create>);
      return reply.code(201).send(await presentOne(ctx, id));
    },
  );

  app.get(
    itemPath,
    {
      ...guard(false),
      schema: { tags, summary: `Get a ${def.noun}`, params: IdParams, response: { 200: item, ...errorReplies } },
    },
    async (request) => presentOne(contextOf(db, request), request.params.id),
  );

  const update = async (request: FastifyRequest) => {
    const ctx = contextOf(db, request);
    const row = await loadVisible(def, ctx, (request.params as Static<typeof IdParams>).id);
    await def.update(ctx, row, request.body as Partial<Static<Update>>);
    return presentOne(ctx, row.id);
  };
  app.put(
    itemPath,
    {
      ...guard(true),
      schema: {
        tags,
        summary: `Replace a ${def.noun}`,
        params: IdParams,
        body: def.updateBody,
        response: { 200: item, ...errorReplies },
      },
    },
    update,
  );
  for (const path of [itemPath, ...(def.patchAliases ?? [])]) {
    app.patch(
      path,
      {
        ...guard(true),
        schema: {
          tags,
          summary: `Update a ${def.noun}`,
          params: IdParams,
          body: patchBody(def.updateBody),
          response: { 200: item, ...errorReplies },
        },
      },
      update,
    );
  }

  app.delete(
    itemPath,
    {
      ...guard(true),
      schema: {
        tags,
        summary: `Delete a ${def.noun}`,
        params: IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorReplies },
      },
    },
    async (request, reply) => {
      const ctx = contextOf(db, request);
      await def.remove(ctx, await loadVisible(def, ctx, request.params.id));
      return reply.code(204).send(null);
    },
  );
}
