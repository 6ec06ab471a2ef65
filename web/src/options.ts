// Processing options as the nodes describe them ({name, type, value, domain, help}, NodeODM's /options) and as
// tasks and presets carry them ([{name, value}]): their typed values, without a browser, so tested under Node.

/** A processing option as a node describes it. */
export interface NodeOption {
  name: string;
  type: string;
  value: string;
  domain: unknown;
  help: string;
}

export type OptionValue = boolean | number | string;

/** How a value is edited: what the option's type asks for, else what the stored value already is. */
export type InputKind = 'bool' | 'int' | 'float' | 'enum' | 'string';

export function inputKind(option: NodeOption | undefined, value?: OptionValue): InputKind {
  if (option) {
    if (Array.isArray(option.domain) || option.type === 'enum') return 'enum';
    if (option.type === 'bool' || option.type === 'int' || option.type === 'float') return option.type;
    return 'string';
  }
  // An option no online node offers (a preset written for another engine): its value keeps its own type.
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return 'string';
}

export function enumChoices(option: NodeOption | undefined): string[] {
  return Array.isArray(option?.domain) ? option.domain.map(String) : [];
}

/**
 * The bounds a domain text states: "integer >= 1", "float: 0 <= x <= 10", "positive integer". ODM calls
 * 0 positive (several "positive" options default to 0), so "positive" bounds at 0.
 */
export function domainBounds(domain: unknown): { min?: number; max?: number } {
  if (typeof domain !== 'string') return {};
  const bounds: { min?: number; max?: number } = {};
  if (/\bpositive\b/i.test(domain)) bounds.min = 0;
  const number = '(-?\\d+(?:\\.\\d+)?)';
  const between = domain.match(new RegExp(`${number}\\s*<=?\\s*x\\s*<=?\\s*${number}`));
  if (between) return { min: Number(between[1]), max: Number(between[2]) };
  const atLeast = domain.match(new RegExp(`>=?\\s*${number}`));
  if (atLeast) bounds.min = Number(atLeast[1]);
  const atMost = domain.match(new RegExp(`<=?\\s*${number}`));
  if (atMost) bounds.max = Number(atMost[1]);
  return bounds;
}

/** The default of a newly chosen option, typed: nodes give every default as a string. */
export function defaultValue(option: NodeOption): OptionValue {
  const kind = inputKind(option);
  if (kind === 'bool') return option.value === 'true';
  if (kind === 'int' || kind === 'float') {
    const number = Number(option.value);
    return option.value !== '' && Number.isFinite(number) ? number : 0;
  }
  return option.value;
}

/** The typed value of what the editor holds, or a sentence saying why it is not one. */
export function parseValue(kind: InputKind, text: string | boolean, name: string): { value: OptionValue } | { error: string } {
  if (kind === 'bool') return { value: text === true || text === 'true' };
  const raw = String(text).trim();
  if (kind === 'int' || kind === 'float') {
    const number = Number(raw);
    if (raw === '' || !Number.isFinite(number)) return { error: `${name} needs a number.` };
    if (kind === 'int' && !Number.isInteger(number)) return { error: `${name} needs a whole number.` };
    return { value: number };
  }
  return { value: String(text) };
}

export function formatValue(value: unknown): string {
  return typeof value === 'string' ? (value === '' ? '""' : value) : JSON.stringify(value);
}

export interface OptionPair {
  name: string;
  value: OptionValue;
}

/** The options whose values differ from the nodes' defaults, in the order the nodes list them. */
export function changedOptions(available: NodeOption[], values: Map<string, OptionValue>): OptionPair[] {
  return available
    .filter((option) => values.has(option.name) && values.get(option.name) !== defaultValue(option))
    .map((option) => ({ name: option.name, value: values.get(option.name)! }));
}
