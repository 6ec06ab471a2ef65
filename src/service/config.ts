// The service's configuration, read from the environment. Every variable is optional; README.md
// ("Configuration") lists them. Invalid values stop the start with a message naming the variable.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';

export interface ServiceConfig {
  host: string;
  port: number;
  dataDir: string;
  /** postgres://... selects PostgreSQL; unset means the SQLite file DATA_DIR/aeromap.sqlite3. */
  databaseUrl: string | undefined;
  secretKey: string;
  tokenLifetimeSeconds: number;
  passwordIterations: number;
  /** Credentials of the superuser created on the first start, when no user exists yet. */
  firstAdmin: { username: string; password: string | undefined };
  /** How often the processing nodes are asked for /info and /options; 0 disables the refresher. */
  nodeRefreshIntervalMs: number;
  nodeTimeoutMs: number;
  bodyLimitBytes: number;
  logLevel: string;
  /** Fastify's trustProxy: which proxies' X-Forwarded-For gives the client's address (request.ip). */
  trustProxy: TrustProxy;
  /** The processing node `aeromap serve` runs in its own process; null when EMBEDDED_NODE is off. */
  /** The node `aeromap serve` starts; a task whose engine runs longer than maxRuntimeMinutes is stopped. */
  embeddedNode: { port: number; dataDir: string; maxRuntimeMinutes?: number } | null;
  tasks: TaskSettings;
}

/** How the scheduler drives tasks, and what task uploads and imports may hold. */
export interface TaskSettings {
  /** false: this instance serves the API but processes no task (another instance does). */
  scheduler: boolean;
  tickMs: number;
  pollMs: number;
  retryMs: number;
  leaseMs: number;
  /** Long transfers (uploads to nodes, result downloads, imports) this instance runs at the same time. */
  concurrency: number;
  /** Short steps (polls, the user's actions, node choice) this instance runs at the same time. */
  stepConcurrency: number;
  /** A step that fails this many times in a row fails its task; the pause after the first failure, doubled each time. */
  maxAttempts: number;
  retryBackoffMs: number;
  nodeOfflineAfterMs: number;
  maxImageBytes: number;
  maxImages: number;
  maxImportBytes: number;
  maxExtractedBytes: number;
  maxZipEntries: number;
  importTimeoutMs: number;
  /** Imports by URL may reach loopback and private networks. */
  allowPrivateUrls: boolean;
  /** Disk space kept free: uploads, imports and result downloads stop short of it. */
  minFreeBytes: number;
  /** Partial tasks and upload chunks older than this are removed. */
  partialExpiryMs: number;
  /** Bound of the tiles drawn in users' styles kept on disk. */
  tileCacheBytes: number;
  /** Most engine tile workers drawing at once, and most tile requests waiting for one. */
  tileWorkers: number;
  tileQueue: number;
  /** Most exports made at once (each an engine process); more wait their turn. */
  exportWorkers: number;
  /** Exported files are removed once older than this. */
  exportExpiryMs: number;
}

/** false: the peer is the client; true: any peer is a proxy; a list: the proxies' addresses and CIDRs. */
export type TrustProxy = boolean | string[];

const GIB = 1024 ** 3;

/** A positive number of seconds (fractions allowed) from the environment, in milliseconds. */
function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback * 1000;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > 86400) throw new ConfigError(`${name} must be a number of seconds from 0 to 86400, got "${raw}"`);
  return Math.round(value * 1000);
}

function booleanSetting(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const flag = (env[name] ?? String(fallback)).trim().toLowerCase();
  if (!['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'].includes(flag)) {
    throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
  }
  return ['true', '1', 'yes', 'on'].includes(flag);
}

function taskSettings(env: NodeJS.ProcessEnv): TaskSettings {
  return {
    scheduler: booleanSetting(env, 'TASK_SCHEDULER', true),
    tickMs: 2000,
    pollMs: seconds(env, 'TASK_POLL_SECONDS', 3),
    retryMs: 10_000,
    leaseMs: seconds(env, 'TASK_LEASE_SECONDS', 60),
    concurrency: integer(env, 'TASK_CONCURRENCY', 4, 1, 64),
    stepConcurrency: integer(env, 'TASK_STEP_CONCURRENCY', 16, 1, 256),
    maxAttempts: integer(env, 'TASK_MAX_ATTEMPTS', 8, 1, 1000),
    retryBackoffMs: seconds(env, 'TASK_RETRY_SECONDS', 2),
    nodeOfflineAfterMs: 5 * 60_000,
    maxImageBytes: integer(env, 'MAX_IMAGE_MB', 1024, 1, 1_000_000) * 1024 * 1024,
    maxImages: 100_000,
    maxImportBytes: integer(env, 'MAX_IMPORT_GB', 100, 1, 100_000) * GIB,
    maxExtractedBytes: integer(env, 'MAX_IMPORT_GB', 100, 1, 100_000) * 4 * GIB,
    maxZipEntries: 1_000_000,
    importTimeoutMs: 30_000,
    allowPrivateUrls: booleanSetting(env, 'ALLOW_PRIVATE_URLS', false),
    minFreeBytes: integer(env, 'MIN_FREE_DISK_GB', 1, 0, 100_000) * GIB,
    partialExpiryMs: integer(env, 'PARTIAL_UPLOAD_EXPIRY_HOURS', 24, 1, 87_600) * 3_600_000,
    tileCacheBytes: integer(env, 'TILE_CACHE_MB', 512, 1, 10_000_000) * 2 ** 20,
    tileWorkers: integer(env, 'TILE_WORKERS', availableParallelism(), 1, 256),
    tileQueue: integer(env, 'TILE_QUEUE', 64, 0, 100_000),
    exportWorkers: integer(env, 'EXPORT_WORKERS', 2, 1, 256),
    exportExpiryMs: integer(env, 'EXPORT_EXPIRY_HOURS', 24, 1, 87_600) * 3_600_000,
  };
}

export class ConfigError extends Error {}

export const DEFAULT_PASSWORD_ITERATIONS = 600_000;
const SECRET_KEY_FILE = 'secret_key';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Parses a duration such as "21600", "90s", "45m", "6h" or "7d" into whole seconds. */
export function parseDuration(text: string): number {
  const match = /^\s*(\d+)\s*([smhd]?)\s*$/i.exec(text);
  if (!match) throw new ConfigError(`"${text}" is not a duration: use seconds or a number with s, m, h or d, e.g. 6h`);
  const seconds = Number(match[1]) * UNIT_SECONDS[(match[2] || 's').toLowerCase()];
  if (seconds <= 0 || !Number.isSafeInteger(seconds)) throw new ConfigError(`duration "${text}" must be positive`);
  return seconds;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/**
 * The signing key of the tokens. Kept in DATA_DIR when SECRET_KEY is unset so that tokens outlive a
 * restart; created with O_EXCL so that two processes starting together agree on one key.
 */
export function loadOrCreateSecretKey(dataDir: string): string {
  const file = path.join(dataDir, SECRET_KEY_FILE);
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(file, randomBytes(48).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = readFileSync(file, 'utf8').trim();
  if (!key) throw new ConfigError(`${file} is empty; delete it or set SECRET_KEY`);
  return key;
}

// proxy-addr's names for address ranges, which Fastify's trustProxy takes besides addresses and CIDRs.
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrCidr(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= (version === 4 ? 32 : 128);
}

function trustProxySetting(env: NodeJS.ProcessEnv): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || raw.toLowerCase() === 'false') return false;
  if (raw.toLowerCase() === 'true') return true;
  const entries = raw.split(',').map((entry) => entry.trim());
  const wrong = entries.filter((entry) => !isAddressOrCidr(entry));
  if (wrong.length) {
    throw new ConfigError(`TRUST_PROXY must be true, false or a comma-separated list of addresses and CIDRs; "${wrong.join('", "')}" is none of them`);
  }
  return entries;
}

function embeddedNodeConfig(env: NodeJS.ProcessEnv, dataDir: string, databaseUrl: string | undefined): ServiceConfig['embeddedNode'] {
  // Instances sharing a PostgreSQL database would each start a node and overwrite one record's token.
  if (!booleanSetting(env, 'EMBEDDED_NODE', databaseUrl === undefined)) return null;
  // A fixed port by default, so that the node keeps one record across restarts.
  const servicePort = integer(env, 'PORT', 8000, 0, 65535);
  const port = integer(env, 'EMBEDDED_NODE_PORT', servicePort > 0 && servicePort < 65535 ? servicePort + 1 : 0, 0, 65535);
  // A run that never ends (a hung library, a survey far beyond the machine) would hold the only slot for good.
  const maxRuntimeMinutes = integer(env, 'EMBEDDED_NODE_MAX_RUNTIME_HOURS', 24, 1, 24 * 365) * 60;
  return { port, dataDir: path.join(dataDir, 'node'), maxRuntimeMinutes };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// (leave it unset for the SQLite file in DATA_DIR)');
  }
  if (databaseUrl && !env.SECRET_KEY) {
    // A key kept in one instance's folder would sign tokens that the other instances on the database refuse.
    throw new ConfigError('SECRET_KEY must be set when DATABASE_URL is: every instance on the database signs tokens with it');
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const config: Omit<ServiceConfig, 'secretKey'> = {
    host: env.HOST || '0.0.0.0',
    port: integer(env, 'PORT', 8000, 0, 65535),
    dataDir,
    databaseUrl,
    tokenLifetimeSeconds: env.TOKEN_LIFETIME ? parseDuration(env.TOKEN_LIFETIME) : 6 * 3600,
    passwordIterations: integer(env, 'PASSWORD_ITERATIONS', DEFAULT_PASSWORD_ITERATIONS, 1, 100_000_000),
    firstAdmin: { username: env.AEROMAP_ADMIN_USERNAME || 'admin', password: env.AEROMAP_ADMIN_PASSWORD || undefined },
    nodeRefreshIntervalMs: 15_000,
    nodeTimeoutMs: 5_000,
    bodyLimitBytes: 1024 * 1024,
    logLevel,
    trustProxy: trustProxySetting(env),
    embeddedNode: embeddedNodeConfig(env, dataDir, databaseUrl),
    tasks: taskSettings(env),
  };
  // Last, so that a configuration error leaves DATA_DIR untouched.
  return { ...config, secretKey: env.SECRET_KEY || loadOrCreateSecretKey(dataDir) };
}
