// Authentication: POST /api/token-auth/ trades a username and password for a JWT (HS256, payload user_id,
// username, email, exp), which later requests carry as "Authorization: JWT <token>" or "?jwt=<token>". The web
// application signs in with POST /api/session/ instead, which puts the same token in an HttpOnly cookie, out of
// reach of any script that gets into a page. Every failure is a 403 with a detail, as WebODM's clients expect
// (they read 403 as "log in again").
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SignJWT, decodeJwt, errors as joseErrors, jwtVerify } from 'jose';
import type { Kysely } from 'kysely';
import type { Database, User } from '../db/schema.ts';
import { findUserById, findUserByUsername, touchLastLogin } from '../db/users.ts';
import { HttpError, notAuthenticated, permissionDenied } from './errors.ts';
import { LoginThrottle } from './login-throttle.ts';
import { spendVerificationTime, verifyPassword } from './passwords.ts';
import type { App } from './typed-app.ts';

export interface Principal {
  id: number;
  username: string;
  email: string;
  superuser: boolean;
  staff: boolean;
}

export interface AuthSettings {
  secretKey: string;
  tokenLifetimeSeconds: number;
  passwordIterations: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** The route answers callers without credentials too (public tasks); it decides what they may see. */
    anonymous?: boolean;
  }
}

/**
 * What a route open to anyone declares: `config` lets callers without credentials through requireUser, and the
 * OpenAPI document lists no credentials among the ways to call it.
 */
export const ANONYMOUS = { config: { anonymous: true } } as const;
export const OPTIONAL_SECURITY: Record<string, string[]>[] = [{}, { jwtHeader: [] }, { jwtQuery: [] }];

/** Staff users run the admin API and manage nodes and system presets; superusers are staff too. */
export const isAdmin = (user: Principal) => user.staff || user.superuser;

const denied = (detail: string) => new HttpError(403, { detail });

function principalOf(user: User): Principal {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    superuser: user.is_superuser === 1,
    staff: user.is_staff === 1,
  };
}

/** Tokens whose signature was checked: map clients send the same one with every tile. */
const VERIFIED_TOKENS = 1024;
/**
 * How long a user read for one request serves the next ones. Changes made through this instance are seen at once
 * (userChanged); another instance on the same PostgreSQL, or the CLI, is seen within this time.
 */
const USER_CACHE_MS = 5000;

export class TokenService {
  private readonly key: Uint8Array;
  private readonly verified = new Map<string, { userId: number; expiresMs: number }>();
  private readonly users = new Map<number, { user: User | undefined; untilMs: number }>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: AuthSettings,
  ) {
    this.key = new TextEncoder().encode(settings.secretKey);
  }

  async issue(user: Pick<User, 'id' | 'username' | 'email'>): Promise<string> {
    return new SignJWT({ user_id: user.id, username: user.username, email: user.email })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime(Math.floor(Date.now() / 1000) + this.settings.tokenLifetimeSeconds)
      .sign(this.key);
  }

  /** The active user whose credentials match, or undefined; as slow for unknown names as for wrong passwords. */
  async checkCredentials(username: string, password: string): Promise<User | undefined> {
    const user = await findUserByUsername(this.db, username);
    if (!user) {
      await spendVerificationTime(this.settings.passwordIterations);
      return undefined;
    }
    const valid = await verifyPassword(password, user.password);
    return valid && user.is_active === 1 ? user : undefined;
  }

  /** The user a request authenticates as; null without credentials; a 403 for credentials that fail. */
  async authenticate(request: FastifyRequest): Promise<Principal | null> {
    const token = tokenOf(request);
    if (token === undefined) return null;
    if (token.fromCookie) checkSameOrigin(request);
    const user = await this.user(await this.verify(token.value));
    if (!user) throw denied('Invalid signature.');
    if (user.is_active !== 1) throw denied('User account is disabled.');
    return principalOf(user);
  }

  /** Forgets what it knew of a user that was changed or deleted. */
  userChanged(userId: number): void {
    this.users.delete(userId);
  }

  private async user(userId: number): Promise<User | undefined> {
    const now = performance.now();
    const known = this.users.get(userId);
    if (known && known.untilMs > now) return known.user;
    const user = await findUserById(this.db, userId);
    if (this.users.size >= VERIFIED_TOKENS) this.users.delete(this.users.keys().next().value as number);
    this.users.set(userId, { user, untilMs: now + USER_CACHE_MS });
    return user;
  }

  private async verify(token: string): Promise<number> {
    const known = this.verified.get(token);
    if (known && known.expiresMs > Date.now()) return known.userId;
    this.verified.delete(token);
    const checked = await this.verifySignature(token);
    if (this.verified.size >= VERIFIED_TOKENS) this.verified.delete(this.verified.keys().next().value as string);
    this.verified.set(token, checked);
    return checked.userId;
  }

  private async verifySignature(token: string): Promise<{ userId: number; expiresMs: number }> {
    try {
      // Only HS256: a token that names another algorithm (or "none") is refused before its signature is read.
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], requiredClaims: ['exp'] });
      if (!Number.isSafeInteger(payload.user_id)) throw denied('Invalid payload.');
      return { userId: payload.user_id as number, expiresMs: (payload.exp as number) * 1000 };
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw denied('Signature has expired.');
      throw denied('Error decoding signature.');
    }
  }
}

/** The web application's session: the token in a cookie that scripts cannot read, sent to the API alone. */
export const SESSION_COOKIE = 'aeromap_session';

function tokenOf(request: FastifyRequest): { value: string; fromCookie: boolean } | undefined {
  const header = request.headers.authorization;
  if (header) {
    const parts = header.trim().split(/\s+/);
    if (parts[0].toLowerCase() === 'jwt') {
      if (parts.length === 1) throw denied('Invalid Authorization header. No credentials provided.');
      if (parts.length > 2) throw denied('Invalid Authorization header. Credentials string should not contain spaces.');
      return { value: parts[1], fromCookie: false };
    }
  }
  const query = (request.query ?? {}) as Record<string, unknown>;
  if (typeof query.jwt === 'string' && query.jwt) return { value: query.jwt, fromCookie: false };
  const cookie = request.cookies?.[SESSION_COOKIE];
  return cookie ? { value: cookie, fromCookie: true } : undefined;
}

/** Whether the request's only credential is the browser's session cookie. */
function sentSessionOnly(request: FastifyRequest): boolean {
  try {
    return tokenOf(request)?.fromCookie === true;
  } catch {
    return false;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A cookie goes with requests that other sites' pages make too (a form posted to the API): a change made with
 * the session cookie must come from a page of this origin, as the browser's Origin header tells.
 */
function checkSameOrigin(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  const origin = request.headers.origin;
  const fetchSite = request.headers['sec-fetch-site'];
  const sameOrigin = origin ? URL.canParse(origin) && new URL(origin).host === request.host : fetchSite === undefined || fetchSite === 'same-origin';
  if (!sameOrigin) throw denied('Cross-site request refused: changes made with the session cookie must come from this site.');
}

/** A URL as it may be logged: a ?jwt= token (map clients send one with every tile) is a credential. */
export function redactToken(url: string): string {
  return url.replace(/([?&]jwt=)[^&#]*/gi, '$1[redacted]');
}

/** What the request log records of a request: Fastify's default fields, the URL without its token. */
export function requestForLog(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactToken(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** The signed-in user of a request that passed requireUser. */
export function currentUser(request: FastifyRequest): Principal {
  if (!request.principal) throw notAuthenticated();
  return request.principal;
}

/** The signed-in user, or null for a caller without credentials on a route open to anyone. */
export const optionalUser = (request: FastifyRequest): Principal | null => request.principal;

export async function requireAdmin(request: FastifyRequest): Promise<void> {
  if (!isAdmin(currentUser(request))) throw permissionDenied();
}

/**
 * Hooks of the authenticated part of the API: every route in the context needs a valid token, but for those open
 * to anyone (ANONYMOUS), where a token is optional. A bad token is refused everywhere, as WebODM does.
 */
export function requireUser(app: App, tokens: TokenService): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    const anonymous = request.routeOptions.config.anonymous === true;
    try {
      request.principal = await tokens.authenticate(request);
    } catch (error) {
      // A browser's stale session must not keep it from what anyone may see (a shared link opened a day after
      // signing in): there, a session cookie that fails is no session. A token sent on purpose is still refused.
      if (!anonymous || !sentSessionOnly(request)) throw error;
      request.principal = null;
    }
    if (!request.principal && !anonymous) throw notAuthenticated();
  });
}

const Credentials = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 150 }),
  password: Type.String({ minLength: 1, maxLength: 4096 }),
});

const SessionSchema = Type.Object({
  user_id: Type.Integer(),
  username: Type.String(),
  exp: Type.Integer({ description: 'When the session ends, in seconds since 1970' }),
});

export async function tokenRoutes(app: App, { tokens, db }: { tokens: TokenService; db: Kysely<Database> }) {
  const throttle = new LoginThrottle();
  /** The user whose credentials the body holds, throttled per address and username; a 400 or 429 otherwise. */
  const logIn = async (request: FastifyRequest, reply: FastifyReply): Promise<User> => {
    const { username, password } = request.body as Static<typeof Credentials>;
    const wait = throttle.waitSeconds(request.ip, username);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      throw new HttpError(429, { detail: `Too many failed attempts. Try again in ${wait} seconds.` });
    }
    const user = await tokens.checkCredentials(username, password);
    if (!user) {
      throttle.failed(request.ip, username);
      throw new HttpError(400, { non_field_errors: ['Unable to log in with provided credentials.'] });
    }
    throttle.succeeded(request.ip, username);
    await touchLastLogin(db, user.id);
    return user;
  };
  const failures = { 400: Type.Ref('Error'), 429: Type.Ref('Error') };

  app.post(
    '/api/token-auth/',
    {
      schema: {
        tags: ['auth'],
        summary: 'Obtain a token',
        description: 'Form or JSON body. Send the token as "Authorization: JWT <token>" or as ?jwt=<token>.',
        security: [],
        body: Credentials,
        response: { 200: Type.Object({ token: Type.String() }), ...failures },
      },
    },
    async (request, reply) => ({ token: await tokens.issue(await logIn(request, reply)) }),
  );

  app.post(
    '/api/session/',
    {
      schema: {
        tags: ['auth'],
        summary: 'Sign in a browser',
        description:
          'Form or JSON body. Sets the token as an HttpOnly cookie for the API, which the browser sends from then on ' +
          '(changes only from pages of this site); answers who signed in and until when.',
        security: [],
        body: Credentials,
        response: { 200: SessionSchema, ...failures },
      },
    },
    async (request, reply) => {
      const token = await tokens.issue(await logIn(request, reply));
      const { user_id, username, exp } = decodeJwt(token) as Static<typeof SessionSchema>;
      reply.setCookie(SESSION_COOKIE, token, {
        httpOnly: true,
        sameSite: 'strict',
        secure: request.protocol === 'https',
        path: '/api/',
        maxAge: exp - Math.floor(Date.now() / 1000),
      });
      return { user_id, username, exp };
    },
  );

  app.delete(
    '/api/session/',
    { schema: { tags: ['auth'], summary: 'Sign a browser out', security: [], response: { 204: Type.Null({ description: 'Signed out' }) } } },
    async (_request, reply) => reply.clearCookie(SESSION_COOKIE, { path: '/api/' }).code(204).send(null),
  );
}
