// The engine's command line as docs/design/engine-contract.md fixes it: `options`, `version`, and
// `run PROJECT_DIR --options FILE` whose stdout is the console plus `::progress:: {json}` lines.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { engineEnvironment } from './environment.ts';
import type { EngineOption } from './options.ts';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The engine a node runs unless told otherwise: $AEROMAP_ENGINE, else the one `make` installs. */
export function defaultEnginePath(): string {
  return process.env.AEROMAP_ENGINE || path.join(REPO_ROOT, 'engine', '.venv', 'bin', 'aeromap-engine');
}

const execFileAsync = promisify(execFile);

const PROGRESS_PREFIX = '::progress::';
// Colour codes some tools print even into a pipe; the console must stay plain text.
const ANSI_ESCAPE = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;

export interface EngineDescription {
  path: string;
  version: string;
  options: EngineOption[];
}

function isEngineOption(o: unknown): o is EngineOption {
  if (typeof o !== 'object' || o === null) return false;
  const { name, type, value, domain, help } = o as Record<string, unknown>;
  return (
    typeof name === 'string' &&
    ['int', 'float', 'string', 'bool', 'enum'].includes(type as string) &&
    typeof value === 'string' &&
    (typeof domain === 'string' || Array.isArray(domain)) &&
    typeof help === 'string' &&
    Object.keys(o).length === 5
  );
}

/** Asks the engine once for its options and version; the node serves both from this answer. An engine that does
 * not answer within the timeout is stopped, and the node does not start, rather than waiting for ever. */
export async function describeEngine(enginePath: string, timeoutMs = 120_000): Promise<EngineDescription> {
  const run = async (command: string): Promise<string> => {
    try {
      const options = { env: engineEnvironment(), maxBuffer: 64 * 2 ** 20, timeout: timeoutMs, killSignal: 'SIGKILL' as const };
      return (await execFileAsync(enginePath, [command], options)).stdout;
    } catch (err) {
      const late = (err as { killed?: boolean }).killed ? `no answer within ${timeoutMs / 1000} s` : (err as Error).message;
      throw new Error(`Cannot run the engine (${enginePath} ${command}): ${late}`);
    }
  };
  const [optionsText, versionText] = await Promise.all([run('options'), run('version')]);
  const options: unknown = JSON.parse(optionsText);
  if (!Array.isArray(options) || !options.every(isEngineOption)) {
    throw new Error(`${enginePath} options did not print a list of {name, type, value, domain, help}`);
  }
  return { path: enginePath, version: versionText.trim(), options };
}

export interface EngineCallbacks {
  onLine(line: string): void;
  /** The whole run's percent, and the stage it is in. */
  onProgress(percent: number, stage: string): void;
}

export interface EngineExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError: Error | null;
  /** The text of the last `[ERROR]` console line: the engine's reason for failing. */
  lastError: string | null;
}

export interface EngineProcess {
  pid: number | undefined;
  exited: Promise<EngineExit>;
  /** Ends the engine and everything it started. */
  kill(): void;
}

function parseProgress(line: string): { percent: number; stage: string } | null {
  try {
    const { percent, stage } = JSON.parse(line.slice(PROGRESS_PREFIX.length)) as { percent?: unknown; stage?: unknown };
    if (typeof percent !== 'number' || !Number.isFinite(percent)) return null;
    return { percent, stage: typeof stage === 'string' ? stage : '' };
  } catch {
    return null;
  }
}

function readLines(stream: Readable, onLine: (line: string) => void): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (raw: string) =>
    onLine(raw.replace(ANSI_ESCAPE, '').trimEnd()),
  );
}

export function killProcessGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

export interface EngineLimits {
  /** Whether the engine may reach loopback and private networks (the nodes that sm-cluster names). */
  allowPrivateUrls: boolean;
  /** The memory the run may hold (--max-memory), which the engine sizes its work by; null: the machine's. */
  maxMemoryBytes: number | null;
}

/** Runs the engine on a task folder. It gets its own process group, so that a cancel reaches every process it
 * started and so that it outlives a crash of the node (which then stops it, see stopLeftoverEngine). Unless
 * private URLs are allowed, the engine is told to reach public addresses only: the processing nodes a task's
 * sm-cluster option names are users' URLs like zipurl. */
export function spawnEngine(
  enginePath: string,
  projectDir: string,
  optionsFile: string,
  limits: EngineLimits,
  callbacks: EngineCallbacks,
): EngineProcess {
  const child: ChildProcess = spawn(enginePath, ['run', projectDir, '--options', optionsFile], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...engineEnvironment(),
      PYTHONUNBUFFERED: '1',
      AEROMAP_PUBLIC_URLS_ONLY: limits.allowPrivateUrls ? '' : '1',
      AEROMAP_MEMORY_LIMIT: limits.maxMemoryBytes === null ? '' : String(limits.maxMemoryBytes),
    },
  });
  let lastError: string | null = null;
  const onLine = (line: string): void => {
    if (line.startsWith(PROGRESS_PREFIX)) {
      const progress = parseProgress(line);
      if (progress !== null) callbacks.onProgress(progress.percent, progress.stage);
      return;
    }
    if (line.startsWith('[ERROR]')) lastError = line.slice('[ERROR]'.length).trim();
    callbacks.onLine(line);
  };
  readLines(child.stdout!, onLine);
  readLines(child.stderr!, onLine);
  const exited = new Promise<EngineExit>((resolve) => {
    child.once('error', (err) => resolve({ code: null, signal: null, spawnError: err, lastError }));
    child.once('close', (code, signal) => resolve({ code, signal, spawnError: null, lastError }));
  });
  return {
    pid: child.pid,
    exited,
    kill: () => {
      if (child.pid !== undefined) killProcessGroup(child.pid);
    },
  };
}

/** Why a run failed, in words for the task's errorMessage; null when it succeeded. */
export function failureMessage(exit: EngineExit): string | null {
  const reason = exit.lastError ? `: ${exit.lastError}` : '';
  if (exit.spawnError) return `Could not start the engine (${exit.spawnError.message})`;
  if (exit.signal === 'SIGKILL' || exit.code === 137) return `Not enough memory: the engine was killed${reason}`;
  if (exit.signal) return `The engine stopped on signal ${exit.signal}${reason}`;
  switch (exit.code) {
    case 0:
      return null;
    case 1:
      return `Processing failed${reason}`;
    case 2:
      return `Invalid options${reason}`;
    case 3:
      return `Cannot process dataset${reason}`;
    default:
      return `Processing failed (exit code ${exit.code})${reason}`;
  }
}

async function commandLine(pid: number): Promise<string | null> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ');
  } catch {
    return null;
  }
}

/** Stops an engine that a previous node process started on this task folder and left running when it died.
 * The process is only touched when its command line names the folder, so a reused pid is left alone. */
export async function stopLeftoverEngine(pid: number, projectDir: string): Promise<void> {
  const isOurs = async (): Promise<boolean> => (await commandLine(pid))?.includes(projectDir) ?? false;
  if (!(await isOurs())) return;
  killProcessGroup(pid);
  for (let i = 0; i < 100 && (await isOurs()); i++) await sleep(50);
}

/** The last line an engine command printed, its answer: its JSON, or its error (the log's `[ERROR] ` left out). */
export function lastEngineLine(stdout: string | undefined): string {
  return (stdout ?? '').trim().split('\n').at(-1)?.replace(/^\[ERROR\]\s*/, '') ?? '';
}

/** Why an engine command failed: its last line, else the process's own error. */
export function engineFailure(error: unknown): string {
  return lastEngineLine((error as { stdout?: string }).stdout) || (error as Error).message;
}
