// Lists: exact-match filters and ?ordering= from an allow-list, turned into SQL. One spec per resource
// yields both the query-string schema (validation, OpenAPI) and the query, so the two cannot disagree.
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import { fieldError } from './errors.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './pagination.ts';
import { INT32 } from './schemas.ts';

export type FilterKind = 'integer' | 'string' | 'datetime' | 'boolean';

export type Filter =
  | { kind: FilterKind; column: string }
  /** A filter that is no plain column comparison, e.g. has_available_options; `description` says what it does. */
  | { kind: FilterKind; where: (value: never) => Expression<SqlBool>; description?: string };

export interface ListSpec {
  filters: Record<string, Filter>;
  /** Field names ?ordering= accepts, and the column each sorts by. Must include id. */
  ordering: Record<string, string> & { id: string };
  defaultOrdering: string[];
  /** Paged lists answer {count, next, previous, results}; the others a plain array. */
  paged: boolean;
}

export type ListQuery = Record<string, unknown> & { ordering?: string; page?: string; page_size?: number };

function filterSchema(kind: FilterKind, description: string): TSchema {
  switch (kind) {
    case 'integer':
      return Type.Integer({ ...INT32, description });
    case 'datetime':
      return Type.String({ format: 'date-time', description });
    case 'boolean':
      return Type.Boolean({ description });
    case 'string':
      return Type.String({ description });
  }
}

export function listQuerySchema(spec: ListSpec): TObject {
  const properties: Record<string, TSchema> = {};
  for (const [name, filter] of Object.entries(spec.filters)) {
    const description = ('description' in filter && filter.description) || `Only items whose ${name} equals this`;
    properties[name] = Type.Optional(filterSchema(filter.kind, description));
  }
  properties.ordering = Type.Optional(
    Type.String({
      description: `Sort by ${Object.keys(spec.ordering).join(', ')}; comma-separated for several; a leading "-" sorts descending`,
    }),
  );
  if (spec.paged) {
    properties.page = Type.Optional(Type.String({ description: 'Page number from 1, or "last"' }));
    properties.page_size = Type.Optional(
      Type.Integer({ minimum: 1, description: `Items per page: ${DEFAULT_PAGE_SIZE} by default, at most ${MAX_PAGE_SIZE}` }),
    );
  }
  return Type.Object(properties);
}

/** An empty parameter (?name=) means "no filter", as in WebODM, rather than "equals the empty string". */
export async function dropEmptyQueryParameters(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>;
  for (const key of Object.keys(query)) if (query[key] === '') delete query[key];
}

function columnValue(kind: FilterKind, value: unknown): unknown {
  if (kind === 'boolean') return value ? 1 : 0;
  // Stored timestamps are toISOString() text; bring any ISO 8601 spelling of the same instant to that form.
  if (kind === 'datetime') return new Date(value as string).toISOString();
  return value;
}

export function applyFilters<QB extends SelectQueryBuilder<any, any, any>>(qb: QB, spec: ListSpec, query: ListQuery): QB {
  let filtered = qb;
  for (const [name, filter] of Object.entries(spec.filters)) {
    const value = query[name];
    if (value === undefined) continue;
    const condition =
      'where' in filter
        ? filter.where(value as never)
        : sql<SqlBool>`${sql.ref(filter.column)} = ${columnValue(filter.kind, value)}`;
    filtered = filtered.where(condition) as QB;
  }
  return filtered;
}

type Direction = 'asc' | 'desc';

/** The sort terms of ?ordering=, or a 400 naming the unknown field. */
export function orderingTerms(spec: ListSpec, ordering: string | undefined): [string, Direction][] {
  const fields = ordering?.split(',').map((field) => field.trim()).filter(Boolean);
  const terms = (fields?.length ? fields : spec.defaultOrdering).map((field): [string, Direction] => {
    const descending = field.startsWith('-');
    const name = descending ? field.slice(1) : field;
    if (!Object.hasOwn(spec.ordering, name)) {
      throw fieldError('ordering', `Unknown field "${name}"; use one of: ${Object.keys(spec.ordering).join(', ')}.`);
    }
    return [spec.ordering[name], descending ? 'desc' : 'asc'];
  });
  // A unique last key keeps the order, and so the pages, stable when the chosen fields tie.
  if (!terms.some(([column]) => column === spec.ordering.id)) terms.push([spec.ordering.id, terms[0]?.[1] ?? 'asc']);
  return terms;
}

export function applyOrdering<QB extends SelectQueryBuilder<any, any, any>>(qb: QB, terms: [string, Direction][]): QB {
  return terms.reduce((ordered, [column, direction]) => ordered.orderBy(sql.ref(column), direction) as QB, qb);
}

const counting = (qb: SelectQueryBuilder<any, any, any>) =>
  qb
    .clearSelect()
    .clearOrderBy()
    .select((eb) => eb.fn.countAll().as('count'));

export async function countRows(qb: SelectQueryBuilder<any, any, any>): Promise<number> {
  return Number((await counting(qb).executeTakeFirstOrThrow()).count);
}

/**
 * A page of rows with the count of all of them, in one query (on PostgreSQL, one round trip): the count is a
 * subquery that refers to no row, which the database runs once. Undefined when the page has no row to carry the
 * count: the list is empty, or the page lies past its end.
 */
export async function countedPage<Row>(
  qb: SelectQueryBuilder<any, any, Row>,
  terms: [string, Direction][],
  offset: number,
  limit: number,
): Promise<{ count: number; rows: Row[] } | undefined> {
  const rows = await applyOrdering(qb, terms).select(counting(qb).as('full_count')).offset(offset).limit(limit).execute();
  if (rows.length === 0) return undefined;
  return { count: Number((rows[0] as { full_count: unknown }).full_count), rows: rows as Row[] };
}
