// `aeromap process PATH [options]`: a run on this machine, as ODM's users work from a shell, or on any
// NodeODM-protocol node with --node URL (as CloudODM does). PATH is a project folder holding images/ (and
// gcp_list.txt, geo.txt), or a folder of photographs, which then gets an images/ folder of links to them.
// The products are written into PATH in ODM's layout; a summary ends the run.
import { copyFile, link, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { extractZip } from '../files/zip-extract.ts';
import { defaultEnginePath, describeEngine, spawnEngine } from '../protocol/engine.ts';
import { NodeClient, NodeError, withRetries } from '../nodeclient/index.ts';
import { isImageName, isVideoName } from '../protocol/files.ts';
import { TaskStatus, isFinished } from '../protocol/status.ts';
import { Display, type Verbosity } from './display.ts';
import { FlagError, type OptionPair, flagsHelp, parseArgs } from './flags.ts';
import { summary } from './summary.ts';

const OWN_FLAGS = { node: true, token: true, engine: true, quiet: false, verbose: false, help: false };

const USAGE = `Usage: aeromap process PATH [options]

Processes the photographs in PATH (a folder of photographs, or a project folder with images/, gcp_list.txt,
geo.txt) and writes the products into PATH in ODM's layout. A run that was stopped resumes where it stopped.

  --node URL        process on a NodeODM-protocol node (aeromap node, NodeODM, ClusterODM) instead
  --token T         the node's token
  --engine PATH     the engine to run locally (default: $AEROMAP_ENGINE or the installed one)
  --quiet           errors and the summary only
  --verbose         every log line, with the progress line on a terminal
  --help            this text

Processing options (the engine's, with ODM's names):`;

/** The project folder for PATH: PATH itself, given an images/ folder of links to the photographs if it has none. */
async function projectFolder(given: string): Promise<string> {
  const project = path.resolve(given);
  const info = await stat(project).catch(() => undefined);
  if (!info?.isDirectory()) throw new FlagError(`${given} is not a folder`);
  const images = path.join(project, 'images');
  if (await stat(images).then((s) => s.isDirectory(), () => false)) return project;
  // Photographs, and videos with the DJI .srt files that place their frames.
  const photos = (await readdir(project)).filter((name) => isImageName(name) || isVideoName(name) || /\.srt$/i.test(name));
  if (!photos.some((name) => isImageName(name) || isVideoName(name))) {
    throw new FlagError(`${given} holds no photographs (JPEG, PNG, TIFF), no videos (MP4, MOV, AVI) and no images/ folder`);
  }
  await mkdir(images);
  for (const name of photos) {
    await link(path.join(project, name), path.join(images, name)).catch(() => copyFile(path.join(project, name), path.join(images, name)));
  }
  return project;
}

/** The files a node gets: the images and the GCP and geo files. */
async function uploadFiles(project: string): Promise<{ name: string; path: string }[]> {
  const images = path.join(project, 'images');
  const files = (await readdir(images)).filter((name) => !name.startsWith('.')).map((name) => ({ name, path: path.join(images, name) }));
  for (const extra of ['gcp_list.txt', 'geo.txt']) {
    const file = path.join(project, extra);
    if (await stat(file).then(() => true, () => false)) files.push({ name: extra, path: file });
  }
  return files;
}

/** Runs the engine here; answers its exit code. Ctrl-C stops it, and the next run resumes. */
async function runLocally(enginePath: string, project: string, options: OptionPair[], display: Display): Promise<number> {
  const optionsFile = path.join(tmpdir(), `aeromap-process-${process.pid}.json`);
  await writeFile(optionsFile, JSON.stringify(options));
  // The user at this machine chose the options: sm-cluster may name a node on their own network.
  const engine = spawnEngine(enginePath, project, optionsFile, { allowPrivateUrls: true, maxMemoryBytes: null }, {
    onLine: (line) => display.log(line),
    onProgress: (percent, stage) => display.progress(stage, percent),
  });
  const interrupt = () => {
    display.end();
    process.stderr.write('Stopping; run the same command again to resume.\n');
    engine.kill();
  };
  process.once('SIGINT', interrupt);
  try {
    const exit = await engine.exited;
    display.end();
    if (exit.spawnError) throw new FlagError(`cannot run the engine ${enginePath}: ${exit.spawnError.message}`);
    return exit.signal ? 130 : (exit.code ?? 1);
  } finally {
    process.off('SIGINT', interrupt);
    await rm(optionsFile, { force: true });
  }
}

// A node busy for hours may miss a poll (a restart, a proxy's hiccup): a failed poll is tried again 1, 2, 4 ...
// up to 30 s later, for about 5 minutes in all, before the run gives up.
const POLL_RETRIES = 13;
const pollPause = (tried: number) => Math.min(30_000, 1000 * 2 ** tried);

/** The node of --node URL (http or https; http when the URL has no scheme). */
function nodeAddress(url: string, token: string | undefined) {
  let address: URL;
  try {
    address = new URL(url.includes('://') ? url : `http://${url}`);
  } catch {
    throw new FlagError(`--node: ${url} is not a URL`);
  }
  if (address.protocol !== 'http:' && address.protocol !== 'https:') throw new FlagError(`--node: only http and https URLs are allowed (${url})`);
  const tls = address.protocol === 'https:';
  return { hostname: address.hostname, port: Number(address.port || (tls ? 443 : 80)), token, tls };
}

/** Runs the task on a node: upload, wait with the node's console and progress, download and unpack. */
async function runOnNode(url: string, token: string | undefined, project: string, options: OptionPair[], display: Display): Promise<number> {
  let client: NodeClient;
  try {
    client = new NodeClient(nodeAddress(url, token), { quickTimeoutMs: 30_000 });
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`aeromap process: ${error.message}\n`);
    return 2;
  }
  const controller = new AbortController();
  let uuid = '';
  const interrupt = () => {
    controller.abort(new Error('interrupted'));
    if (uuid) void client.cancelTask(uuid).catch(() => undefined);
  };
  process.once('SIGINT', interrupt);
  try {
    const files = await uploadFiles(project);
    uuid = await client.createTask(files, {
      name: path.basename(project),
      options: options as { name: string; value: string }[],
      signal: controller.signal,
      onProgress: (fraction) => display.progress('upload', fraction * 100),
    });
    display.log(`[INFO] Uploaded ${files.length} files to ${client.label}: task ${uuid}`);
    let lines = 0;
    for (;;) {
      const info = await withRetries(POLL_RETRIES, controller.signal, () => client.taskInfo(uuid, lines), pollPause);
      for (const line of info.output ?? []) display.log(line);
      lines += info.output?.length ?? 0;
      if (info.status.code === TaskStatus.COMPLETED) break;
      if (isFinished(info.status.code)) {
        display.end();
        process.stderr.write(`The node ${info.status.code === TaskStatus.FAILED ? `failed the task: ${info.status.errorMessage ?? ''}` : 'canceled the task'}\n`);
        return 1;
      }
      if (info.progress !== undefined) display.progress('processing', info.progress);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      controller.signal.throwIfAborted();
    }
    const zip = path.join(project, 'all.zip');
    await client.downloadAllZip(uuid, zip, { signal: controller.signal, onProgress: (fraction) => display.progress('download', fraction * 100) });
    await extractZip(zip, project, 'tree');
    await rm(zip, { force: true });
    display.end();
    return 0;
  } catch (error) {
    display.end();
    if (controller.signal.aborted) return 130;
    if (error instanceof NodeError) {
      process.stderr.write(`aeromap: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    process.off('SIGINT', interrupt);
  }
}

async function processCommand(args: string[]): Promise<number> {
  const enginePath = args.includes('--engine') ? args[args.indexOf('--engine') + 1] : defaultEnginePath();
  const engine = await describeEngine(enginePath);
  let parsed;
  try {
    parsed = parseArgs(args, engine.options, OWN_FLAGS);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`aeromap process: ${error.message}\n`);
    return 2;
  }
  if (parsed.own.help || parsed.positionals.length !== 1) {
    const stream = parsed.own.help ? process.stdout : process.stderr;
    stream.write(`${USAGE}\n${flagsHelp(engine.options)}\n`);
    return parsed.own.help ? 0 : 2;
  }
  const verbosity: Verbosity = parsed.own.quiet ? 'quiet' : parsed.own.verbose ? 'verbose' : 'normal';
  const display = new Display(process.stdout, verbosity);
  let project: string;
  try {
    project = await projectFolder(parsed.positionals[0]);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`aeromap process: ${error.message}\n`);
    return 3;
  }
  const node = parsed.own.node;
  const code =
    typeof node === 'string'
      ? await runOnNode(node, typeof parsed.own.token === 'string' ? parsed.own.token : undefined, project, parsed.options, display)
      : await runLocally(enginePath, project, parsed.options, display);
  if (code === 0) process.stdout.write(`${await summary(project)}\n`);
  return code;
}

export function registerProcessCommand(program: Command): void {
  program
    .command('process')
    .description('process a folder of photographs here, or on a node with --node URL (`aeromap process --help`)')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async (args: string[]) => {
      process.exitCode = await processCommand(args);
    });
}
