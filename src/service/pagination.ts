// Page numbers as Django REST framework's PageNumberPagination has them: {count, next, previous, results},
// absolute links, ?page= from 1 (or "last"), ?page_size= up to a maximum; a page past the end is a 404.
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { notFound } from './errors.ts';
import { Nullable } from './schemas.ts';

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 1000;

export interface PageWindow {
  offset: number;
  limit: number;
  next: string | null;
  previous: string | null;
}

export function PageOf<T extends TSchema>(item: T) {
  return Type.Object({
    count: Type.Integer({ minimum: 0 }),
    next: Nullable(Type.String({ format: 'uri' })),
    previous: Nullable(Type.String({ format: 'uri' })),
    results: Type.Array(item),
  });
}

function pageLink(request: FastifyRequest, page: number): string {
  const url = new URL(request.url, `${request.protocol}://${request.host}`);
  if (page === 1) url.searchParams.delete('page');
  else url.searchParams.set('page', String(page));
  return url.href;
}

type PageQuery = { page?: string; page_size?: number };

const pageSize = (query: PageQuery) => Math.min(query.page_size ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
const pageNumber = (query: PageQuery) => {
  const text = query.page ?? '1';
  return /^\d{1,9}$/.test(text) ? Number(text) : undefined;
};

/** The rows a page asks for by number, known before the rows are counted; undefined for "last" or no number. */
export function requestedPage(query: PageQuery): { offset: number; limit: number } | undefined {
  const page = pageNumber(query);
  if (!page) return undefined;
  return { offset: (page - 1) * pageSize(query), limit: pageSize(query) };
}

export function pageWindow(request: FastifyRequest, count: number, query: PageQuery): PageWindow {
  const size = pageSize(query);
  const pages = Math.max(1, Math.ceil(count / size));
  const page = query.page === 'last' ? pages : (pageNumber(query) ?? Number.NaN);
  if (!(page >= 1 && page <= pages)) throw notFound('Invalid page.');
  return {
    offset: (page - 1) * size,
    limit: size,
    next: page < pages ? pageLink(request, page + 1) : null,
    previous: page > 1 ? pageLink(request, page - 1) : null,
  };
}
