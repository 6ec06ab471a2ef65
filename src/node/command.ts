// `aeromap node`: a processing node that speaks the NodeODM API, with NodeODM's settings as flags.
import { Command, InvalidArgumentError, Option } from 'commander';
import { FOLDER_IN_USE_EXIT_CODE, type NodeReady } from '../protocol/node-child.ts';
import { FolderInUseError } from './lock.ts';
import { defaultEnginePath, startNode } from './server.ts';

function integerFrom(min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`Not a whole number >= ${min}.`);
    return n;
  };
}

function minutes(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('Not a number of minutes >= 0.');
  return n;
}

function gigabytes(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('Not a number of gigabytes > 0.');
  return n;
}

/** Names from the command line or the environment (separated by commas or spaces), added to those before. */
function names(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(/[\s,]+/).filter(Boolean)];
}

interface NodeFlags {
  port: number;
  host: string;
  dataDir: string;
  token?: string;
  maxImages?: number;
  parallelTasks: number;
  cleanupAfter: number;
  webhook?: string;
  allowPrivateUrls?: boolean;
  corsOrigin?: string[];
  allowedHosts?: string[];
  minFreeDisk: number;
  maxRuntime?: number;
  maxMemory?: number;
  engine?: string;
}

export function registerNodeCommand(program: Command): void {
  program
    .command('node')
    .description('run a processing node (NodeODM API 2.x) that processes tasks with the Aeromap engine')
    .option('--port <n>', 'port to listen on (0: any free port)', integerFrom(0), 3000)
    .option('--host <address>', 'address to listen on (0.0.0.0: every interface; then set --token)', '127.0.0.1')
    .option('--data-dir <dir>', 'folder for the task database, uploads and task folders', 'data/node')
    .addOption(new Option('--token <token>', 'require this token (query parameter token=) on every request').env('AEROMAP_NODE_TOKEN'))
    .option('--max-images <n>', 'refuse tasks with more images than this (default: no limit)', integerFrom(1))
    .option('--parallel-tasks <n>', 'tasks processed at the same time', integerFrom(1), 1)
    .option('--cleanup-after <minutes>', 'remove finished tasks this long after they end (0: never)', minutes, 2880)
    .option('--webhook <url>', 'URL to POST every finished task to')
    .option('--max-runtime <minutes>', 'stop and fail a task whose engine runs longer (default: no limit)', minutes)
    .option('--max-memory <GB>', 'stop and fail a task whose engine holds more memory (default: no limit)', gigabytes)
    .option('--min-free-disk <GB>', 'disk space kept free: uploads and unpacking stop short of it', Number, 1)
    .option('--cors-origin <origin...>', 'web applications (e.g. https://maps.example.org) whose browser requests are accepted')
    .addOption(
      new Option('--allowed-hosts <name...>', 'host names (besides loopback) this node answers without --token, e.g. a proxy\'s')
        .env('AEROMAP_NODE_ALLOWED_HOSTS')
        .argParser(names),
    )
    .option('--allow-private-urls', 'let zipurl and webhooks reach loopback and private networks (default: public addresses only)')
    .option('--engine <path>', `engine executable (default: $AEROMAP_ENGINE or ${defaultEnginePath()})`)
    .action(async (flags: NodeFlags) => {
      // Run by another process (the service's embedded node), the node goes when that process goes, even killed
      // (the IPC channel closes), and its output, which goes there, may find no reader.
      let stop = (): void => {};
      let parentGone = false;
      if (process.send) {
        for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
        process.once('disconnect', () => {
          parentGone = true;
          stop();
        });
      }
      // A node that cannot start (its folder in use, its port taken, no engine) says why in one line.
      const node = await startNode({
        dataDir: flags.dataDir,
        port: flags.port,
        host: flags.host,
        token: flags.token,
        maxImages: flags.maxImages,
        parallelTasks: flags.parallelTasks,
        cleanupAfterMinutes: flags.cleanupAfter,
        webhook: flags.webhook,
        allowPrivateUrls: flags.allowPrivateUrls,
        corsOrigins: flags.corsOrigin,
        allowedHosts: flags.allowedHosts,
        minFreeBytes: Math.max(0, flags.minFreeDisk) * 2 ** 30,
        maxRuntimeMs: flags.maxRuntime ? flags.maxRuntime * 60_000 : null,
        maxMemoryBytes: flags.maxMemory ? flags.maxMemory * 2 ** 30 : null,
        enginePath: flags.engine,
      }).catch((error: Error) => {
        process.stderr.write(`aeromap node: ${error.message}\n`);
        process.exit(error instanceof FolderInUseError ? FOLDER_IN_USE_EXIT_CODE : 1);
      });
      console.log(`Aeromap processing node listening on http://${flags.host}:${node.port} (data: ${flags.dataDir})`);
      if (!flags.token && !['127.0.0.1', '::1', 'localhost'].includes(flags.host)) {
        console.warn(`Warning: without --token, anyone who reaches ${flags.host}:${node.port} can submit and remove tasks`);
      }
      let stopping: Promise<void> | undefined;
      stop = (): void => {
        stopping ??= node.close().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // A parent killed just now may not have been noticed yet: the message then fails (EPIPE) rather than 'disconnect'
      // firing first, and the node goes all the same.
      if (parentGone) stop();
      else process.send?.({ listening: node.port } satisfies NodeReady, undefined, undefined, (error) => error && stop());
    });
}
