// Error replies. Every failure the client can cause becomes a 4xx with a JSON body in the shapes DESIGN.md
// fixes: {"detail": "..."} for 403/404/405/413 and for validation that concerns no single field, and
// {"field": ["message"]} for field errors. Anything else is a bug: logged, and answered 500.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { ErrorReply } from './schemas.ts';
import { isPageRequest, sendPage } from './web.ts';

export type ErrorBody = Record<string, unknown>;

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: ErrorBody,
    /** Headers of the reply, such as Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.detail === 'string' ? body.detail : JSON.stringify(body));
  }
}

export const notFound = (detail = 'Not found.') => new HttpError(404, { detail });
export const permissionDenied = (detail = 'You do not have permission to perform this action.') =>
  new HttpError(403, { detail });
export const notAuthenticated = () => new HttpError(403, { detail: 'Authentication credentials were not provided.' });
export const fieldErrors = (errors: Record<string, string[]>) => new HttpError(400, errors);
export const fieldError = (field: string, message: string) => fieldErrors({ [field]: [message] });

type ValidationIssue = Pick<FastifySchemaValidationError, 'keyword' | 'instancePath' | 'params' | 'message'>;

const TYPE_MESSAGES: Record<string, string> = {
  integer: 'A valid integer is required.',
  number: 'A valid number is required.',
  string: 'Not a valid string.',
  boolean: 'Must be a valid boolean.',
  array: 'Expected a list of items.',
  object: 'Expected an object.',
  null: 'Expected null.',
};

function issueMessage({ keyword, params, message }: ValidationIssue): string {
  const limit = params.limit as number;
  switch (keyword) {
    case 'required':
      return 'This field is required.';
    case 'type': {
      const types = ([] as string[]).concat(params.type as string | string[]);
      return types.length === 1 ? (TYPE_MESSAGES[types[0]] ?? `Expected ${types[0]}.`) : `Expected ${types.join(' or ')}.`;
    }
    case 'minLength':
      return limit === 1 ? 'This field may not be blank.' : `Ensure this field has at least ${limit} characters.`;
    case 'maxLength':
      return `Ensure this field has no more than ${limit} characters.`;
    case 'minimum':
      return `Ensure this value is greater than or equal to ${limit}.`;
    case 'maximum':
      return `Ensure this value is less than or equal to ${limit}.`;
    case 'enum':
      return `Must be one of: ${(params.allowedValues as unknown[]).join(', ')}.`;
    case 'format':
      return params.format === 'date-time' ? 'Datetime has wrong format. Use ISO 8601.' : `Enter a valid ${params.format}.`;
    case 'pattern':
      return 'Enter a valid value.';
    default:
      return message ? `${message[0].toUpperCase()}${message.slice(1)}.` : 'Invalid value.';
  }
}

/** Schema violations grouped by the top-level field they concern; those about the whole body become a detail. */
export function validationBody(issues: ValidationIssue[]): ErrorBody {
  const fields: Record<string, string[]> = {};
  for (const issue of issues) {
    const segments = issue.instancePath.split('/').slice(1);
    if (issue.keyword === 'required') segments.push(String(issue.params.missingProperty));
    const message = issueMessage(issue);
    if (segments.length === 0) return { detail: `Invalid data. ${message}` };
    const [field, ...inner] = segments;
    const text = inner.length ? `${inner.join('.')}: ${message}` : message;
    const list = (fields[field] ??= []);
    if (!list.includes(text)) list.push(text);
  }
  return fields;
}

/**
 * The top-level field holding the first value that matches ("" when it is the value itself), or undefined.
 * Iterative, so that deeply nested JSON cannot exhaust the stack.
 */
export function findField(value: unknown, match: (leaf: unknown) => boolean): string | undefined {
  const pending: [unknown, string][] = [[value, '']];
  while (pending.length) {
    const [current, field] = pending.pop() as [unknown, string];
    if (match(current)) return field;
    if (current !== null && typeof current === 'object') {
      for (const [key, inner] of Object.entries(current)) pending.push([inner, field || key]);
    }
  }
  return undefined;
}

const holdsNul = (leaf: unknown) => typeof leaf === 'string' && leaf.includes('\0');
// Ajv's type coercion turns "1e400" into Infinity and then skips the range checks of non-finite numbers.
const nonFinite = (leaf: unknown) => typeof leaf === 'number' && !Number.isFinite(leaf);

function isConstraintViolation(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  // PostgreSQL: 23xxx integrity constraint violations; SQLite: SQLITE_CONSTRAINT_*.
  return typeof code === 'string' && (/^23\d{3}$/.test(code) || code.startsWith('SQLITE_CONSTRAINT'));
}

function describe(error: FastifyError, request: FastifyRequest): { status: number; body: ErrorBody } {
  if (error instanceof HttpError) return { status: error.statusCode, body: error.body };
  if (error.validation) {
    // A malformed id in the path names no object at all.
    if (error.validationContext === 'params') return { status: 404, body: { detail: 'Not found.' } };
    return { status: 400, body: validationBody(error.validation) };
  }
  if (isConstraintViolation(error)) {
    return { status: 400, body: { detail: 'The request conflicts with existing data (a duplicate or a missing reference).' } };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { detail: 'Request body is too large.' } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, body: { detail: `Unsupported media type "${request.headers['content-type'] ?? ''}" in request.` } };
  }
  // The multipart parser throws plain errors on a malformed body (no boundary, broken part headers).
  if (/^(Multipart: |Malformed part header|Unexpected end of (form|multipart))/.test(error.message)) {
    return { status: 400, body: { detail: `Malformed multipart body: ${error.message}` } };
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status, body: { detail: error.message } };
  return { status: 500, body: { detail: 'A server error occurred.' } };
}

/** Error replies as WebODM gives them; with `pages`, a GET outside the API that matches no route is a page of the web application. */
export function installErrorHandling(app: FastifyInstance, pages = false): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const { status, body } = describe(error, request);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (error instanceof HttpError) reply.headers(error.headers);
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((request, reply) =>
    pages && isPageRequest(request) ? sendPage(reply) : reply.code(404).send({ detail: 'Not found.' }),
  );
  // Strings with NUL would pass the schemas but fail in PostgreSQL; refuse them for both databases. Any request
  // may carry them in its query string, so every operation documents the 400.
  app.addHook('onRoute', (route) => {
    const replies = route.schema?.response as Record<string, unknown> | undefined;
    if (replies) replies[400] ??= { $ref: ErrorReply.$id };
  });
  app.addHook('preValidation', async (request) => {
    const field = findField(request.query, holdsNul) ?? findField(request.body, holdsNul);
    if (field !== undefined) throw fieldError(field || 'non_field_errors', 'Null characters are not allowed.');
  });
  app.addHook('preHandler', async (request) => {
    if (findField(request.params, nonFinite) !== undefined) throw notFound();
    const field = findField(request.query, nonFinite) ?? findField(request.body, nonFinite);
    if (field !== undefined) throw fieldError(field || 'non_field_errors', 'A finite number is required.');
  });
}

export function methodNotAllowed(method: string): HttpError {
  return new HttpError(405, { detail: `Method "${method}" not allowed.` });
}
