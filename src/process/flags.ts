// The engine's options as command-line flags with ODM's names (`--dsm`, `--pc-quality high`,
// `--orthophoto-resolution=2`), made from the engine's own option list so that the two never drift. Values
// are checked as a node checks them; a flag that does not exist is answered with the closest one that does.
import { type EngineOption, validateOptions } from '../protocol/options.ts';

export class FlagError extends Error {}

export type OptionPair = { name: string; value: unknown };

/** Edit distance, for suggesting the flag that was meant. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

export function closest(name: string, candidates: string[]): string | undefined {
  let best: { name: string; score: number } | undefined;
  for (const candidate of candidates) {
    const score = distance(name, candidate);
    if (!best || score < best.score) best = { name: candidate, score };
  }
  return best && best.score <= Math.max(2, Math.floor(name.length / 3)) ? best.name : undefined;
}

/** The command's own flags: true for those that take a value. */
export type OwnFlags = Record<string, boolean>;

export interface ParsedArgs {
  positionals: string[];
  own: Record<string, string | true>;
  options: OptionPair[];
}

/**
 * The words after the command: its own flags, the engine options and the positional arguments. A bool option
 * stands alone (`--dsm`) or takes `=true|false`; any other flag takes the next word or `=value`.
 */
export function parseArgs(args: string[], specs: readonly EngineOption[], ownFlags: OwnFlags): ParsedArgs {
  const byName = new Map(specs.map((spec) => [spec.name, spec]));
  const parsed: ParsedArgs = { positionals: [], own: {}, options: [] };
  const given: OptionPair[] = [];
  for (let i = 0; i < args.length; i++) {
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(args[i]);
    if (!match) {
      parsed.positionals.push(args[i]);
      continue;
    }
    const [, name, inline] = match;
    const spec = byName.get(name);
    const takesValue = name in ownFlags ? ownFlags[name] : spec && spec.type !== 'bool';
    if (!spec && !(name in ownFlags)) {
      const hint = closest(name, [...Object.keys(ownFlags), ...byName.keys()]);
      throw new FlagError(`unknown option --${name}${hint ? `; did you mean --${hint}?` : ''} (--help lists them)`);
    }
    let value: string | true | undefined = inline;
    if (value === undefined) {
      if (!takesValue) value = true;
      else if (i + 1 < args.length) value = args[++i];
      else throw new FlagError(`--${name} needs a value${spec ? ` (${describeDomain(spec)})` : ''}`);
    }
    if (name in ownFlags) parsed.own[name] = value;
    else given.push({ name, value });
  }
  const checked = validateOptions(specs, given);
  if (!checked.ok) {
    const errors = JSON.parse(checked.error) as { name: string; error: string }[];
    throw new FlagError(errors.map((e) => `--${e.name}: ${e.error}; expected ${describeDomain(byName.get(e.name) as EngineOption)}`).join('\n'));
  }
  parsed.options = checked.options;
  return parsed;
}

function describeDomain(spec: EngineOption): string {
  if (Array.isArray(spec.domain)) return `one of ${spec.domain.filter(Boolean).join(', ')}`;
  return spec.domain || spec.type;
}

/** The help text of the engine options: each flag, its value, default and help. */
export function flagsHelp(specs: readonly EngineOption[]): string {
  return specs
    .map((spec) => {
      const value = spec.type === 'bool' ? '' : ` <${Array.isArray(spec.domain) ? spec.domain.filter(Boolean).join('|') : spec.type}>`;
      const fallback = spec.value === '' ? '' : ` (default: ${spec.value})`;
      return `  --${spec.name}${value}\n      ${spec.help}${fallback}`;
    })
    .join('\n');
}
