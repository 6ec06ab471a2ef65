// The import graph keeps the parts apart: the service, the processing node, the CLI and the web application
// each import their own modules and the shared ones (the NodeODM contract in src/protocol, file and network
// helpers, the node client), never another part's; shared modules import only shared ones; and no module
// imports itself back through others.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const SHARED = ['src/protocol', 'src/files', 'src/net', 'src/nodeclient'];
const PARTS: Record<string, string[]> = {
  service: ['src/service', 'src/db'],
  node: ['src/node'],
  cli: ['src/process'],
  web: ['web/src'],
};
/** The command line's entry registers every part's commands. */
const ENTRY = 'src/cli.ts';

interface Import {
  target: string;
  typeOnly: boolean;
}

function sources(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.tsx?$/.test(name) && !name.includes('node_modules'))
    .map((name) => path.posix.join(folder, name.split(path.sep).join('/')));
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?[^'";]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'|import\('(\.[^']+)'\)/gm;

function importsOf(file: string): Import[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => ({
    target: path.posix.normalize(path.posix.join(path.posix.dirname(file), m[3] ?? m[4] ?? m[5])),
    typeOnly: m[2] !== undefined,
  }));
}

const within = (file: string, folders: string[]) => folders.some((folder) => file.startsWith(`${folder}/`));

function partOf(file: string): string {
  if (within(file, SHARED)) return 'shared';
  const part = Object.entries(PARTS).find(([, folders]) => within(file, folders));
  return part ? part[0] : 'other';
}

const files = [...SHARED, ...Object.values(PARTS).flat()].flatMap(sources).concat(ENTRY);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

/** Every import that crosses from one part into another's internals. */
function crossings(): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    if (file === ENTRY) continue;
    const from = partOf(file);
    for (const { target } of imports) {
      const to = partOf(target);
      const allowed = to === from || (to === 'shared' && (from !== 'web' || target.startsWith('src/protocol/')));
      if (!allowed) found.push(`${file} (${from}) imports ${target} (${to})`);
    }
  }
  return found;
}

/** The cycles of value imports (type-only imports vanish from the compiled code), as lists of modules. */
function cycles(): string[][] {
  const edges = new Map([...graph].map(([file, imports]) => [file, imports.filter((i) => !i.typeOnly).map((i) => i.target)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (!edges.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(member);
      } while (member !== file);
      if (component.length > 1) found.push(component);
    }
  };
  for (const file of edges.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('the import graph', () => {
  it('reads the imports it checks', () => {
    expect(graph.get('src/service/tasks/intake.ts')!.map((i) => i.target)).toContain('src/protocol/files.ts');
    expect(partOf('src/db/tasks.ts')).toBe('service');
    expect(partOf('src/protocol/status.ts')).toBe('shared');
  });

  it('keeps every part out of the others’ internals', () => {
    expect(crossings()).toEqual([]);
  });

  it('has no cycle of modules', () => {
    expect(cycles()).toEqual([]);
  });
});
