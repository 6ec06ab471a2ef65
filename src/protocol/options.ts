// Processing options as NodeODM checks them (reference §1.3): the engine's list decides which names exist;
// values are converted to the option's type and checked against its domain; unknown names are dropped.

/** One processing option of a task, its value already converted to the option's type. */
export interface OptionValue {
  name: string;
  value: unknown;
}

export type OptionType = 'int' | 'float' | 'string' | 'bool' | 'enum';

/** One entry of /options, exactly as the engine prints it (`aeromap-engine options`). */
export interface EngineOption {
  name: string;
  type: OptionType;
  value: string;
  domain: string | string[];
  help: string;
}

export interface OptionError {
  name: string;
  error: string;
}

/** The options typed and checked, and the names given that the engine does not have (left out, as NodeODM does). */
export type OptionsResult = { ok: true; options: OptionValue[]; ignored: string[] } | { ok: false; error: string };

/** Options the node turns on for every task unless the client asks to skip post-processing, when the engine
 * has them (as NodeODM does for ODM's point cloud tiles, cloud-optimized GeoTIFFs and glTF models). */
const POST_PROCESSING_OPTIONS = ['pc-ept', 'cog', 'gltf'];

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '') return Number(value);
  return Number.NaN;
}

// Stricter than NodeODM's parseInt/parseFloat, which would turn "3.5" into 3 or "5abc" into 5: the engine
// refuses such values anyway, and a task refused at submission is better than one that fails later.
const CONVERT: Record<OptionType, (value: unknown) => unknown> = {
  int(value) {
    const n = toNumber(value);
    if (!Number.isInteger(n)) throw new Error(`Invalid value ${String(value)} (not an integer)`);
    return n;
  },
  float(value) {
    const n = toNumber(value);
    if (!Number.isFinite(n)) throw new Error(`Invalid value ${String(value)} (not a number)`);
    return n;
  },
  bool(value) {
    if (value === true || value === 'true' || value === '1') return true;
    if (value === false || value === 'false' || value === '0') return false;
    throw new Error(`Cannot convert ${String(value)} to boolean`);
  },
  string: (value) => value ?? '',
  enum: (value) => value,
};

interface DomainCheck {
  pattern: RegExp;
  accepts(match: RegExpMatchArray, value: unknown): boolean;
}

const NUMBER = '([-+.\\d]+)';

function compare(value: number, operator: string, bound: number): boolean {
  switch (operator) {
    case '>=':
      return value >= bound;
    case '>':
      return value > bound;
    case '<=':
      return value <= bound;
    case '<':
      return value < bound;
    default:
      return false;
  }
}

// The domain texts NodeODM understands; an engine that declares another text is out of contract.
const DOMAIN_CHECKS: DomainCheck[] = [
  {
    pattern: /^(positive |negative )?(integer|float)$/,
    accepts: ([, sign, kind], value) => {
      if (sign === 'positive ') return (value as number) >= 0;
      if (sign === 'negative ') return (value as number) <= 0;
      return kind === 'integer' ? Number.isInteger(value) : Number.isFinite(value);
    },
  },
  { pattern: /^percent$/, accepts: (_, value) => (value as number) >= 0 && (value as number) <= 100 },
  {
    pattern: new RegExp(`^(float|integer): ${NUMBER} <= x <= ${NUMBER}$`),
    accepts: ([, , low, high], value) => (value as number) >= Number(low) && (value as number) <= Number(high),
  },
  {
    pattern: new RegExp(`^(float|integer) (>=|>|<=|<) ${NUMBER}$`),
    accepts: ([, , operator, bound], value) => compare(value as number, operator, Number(bound)),
  },
  {
    pattern: /^json$/,
    accepts: (_, value) => {
      if (typeof value !== 'string') return false;
      try {
        JSON.parse(value);
        return true;
      } catch {
        return false;
      }
    },
  },
  { pattern: /^(string|path)$/, accepts: () => true },
];

function checkDomain(domain: string | string[], value: unknown): void {
  if (Array.isArray(domain)) {
    if (!domain.includes(value as string)) throw new Error(`Invalid value ${String(value)} (not in enum)`);
    return;
  }
  if (domain === '') return;
  for (const check of DOMAIN_CHECKS) {
    const match = domain.match(check.pattern);
    if (match) {
      if (!check.accepts(match, value)) throw new Error(`Invalid value ${String(value)} (out of range)`);
      return;
    }
  }
  throw new Error(`Domain value cannot be handled: '${domain}' : '${String(value)}'`);
}

/** The `{name, value}` pairs a client sent: a JSON string or an array; anything else counts as none. */
function parseInput(input: unknown): unknown[] {
  const parsed = typeof input === 'string' && input.trim() !== '' ? JSON.parse(input) : input;
  return Array.isArray(parsed) ? parsed : [];
}

function findGiven(given: unknown[], name: string): { value?: unknown } | undefined {
  return given.find(
    (o): o is { name: string; value?: unknown } =>
      typeof o === 'object' && o !== null && (o as { name?: unknown }).name === name,
  );
}

/**
 * Typed options in the engine's order from what a client sent, or an error whose message is the JSON array of
 * `{name, error}` that NodeODM answers.
 */
export function validateOptions(specs: readonly EngineOption[], input: unknown): OptionsResult {
  let given: unknown[];
  try {
    given = parseInput(input);
  } catch (err) {
    return { ok: false, error: `Invalid options: ${(err as Error).message}` };
  }
  const options: OptionValue[] = [];
  const errors: OptionError[] = [];
  for (const spec of specs) {
    const opt = findGiven(given, spec.name);
    if (!opt) continue;
    try {
      const value = CONVERT[spec.type](opt.value);
      checkDomain(spec.domain, value);
      options.push({ name: spec.name, value });
    } catch (err) {
      errors.push({ name: spec.name, error: (err as Error).message });
    }
  }
  if (errors.length > 0) return { ok: false, error: JSON.stringify(errors) };
  const known = new Set(specs.map((spec) => spec.name));
  const names = given.flatMap((o) => (typeof o === 'object' && o !== null && typeof (o as { name?: unknown }).name === 'string' ? [(o as { name: string }).name] : []));
  return { ok: true, options, ignored: [...new Set(names.filter((name) => !known.has(name)))] };
}

/** The console line that names the options a node leaves out, so that nobody thinks they took effect. */
export function ignoredOptionsLine(node: string, names: string[]): string {
  return `[WARNING] ${node} does not know ${names.length > 1 ? 'these options' : 'this option'}, ignored: ${names.join(', ')}`;
}

/** The options with the engine's post-processing options turned on where the client left them unset. */
export function withPostProcessing(
  specs: readonly EngineOption[],
  options: OptionValue[],
  skipPostProcessing: boolean,
): OptionValue[] {
  if (skipPostProcessing) return options;
  const added = POST_PROCESSING_OPTIONS.filter(
    (name) => specs.some((s) => s.name === name && s.type === 'bool') && !options.some((o) => o.name === name),
  ).map((name) => ({ name, value: true }));
  return [...options, ...added];
}
