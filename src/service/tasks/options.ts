// A task's processing options, checked before the task is accepted: a list of {name, value} (or its JSON text)
// whose names the chosen node offers and whose values its /options allow, so that a mistake is a 400 now
// rather than a failed task later.
import type { ProcessingNode } from '../../db/schema.ts';
import { type EngineOption, validateOptions } from '../../protocol/options.ts';
import { fieldError, fieldErrors } from '../errors.ts';
import { commonOptions } from '../processingnodes.ts';
import { TaskOptions } from '../schemas.ts';

const isValue = (value: unknown) => ['boolean', 'number', 'string'].includes(typeof value);

// The same shape as the TaskOptions schema, checked here because multipart fields and JSON text reach the
// handler unparsed.
function isOptionList(list: unknown): list is OptionPair[] {
  return (
    Array.isArray(list) &&
    list.length <= (TaskOptions.maxItems ?? Infinity) &&
    list.every(
      (item) =>
        typeof item === 'object' && item !== null && typeof item.name === 'string' && item.name.length > 0 && item.name.length <= 255 && isValue(item.value),
    )
  );
}

export type OptionPair = { name: string; value: boolean | number | string };

/** The list a client sent (a list, or JSON text of one), in its shape; a 400 on the options field otherwise. */
export function parseOptions(given: unknown): OptionPair[] {
  let list = given;
  if (typeof given === 'string') {
    try {
      list = given.trim() === '' ? [] : JSON.parse(given);
    } catch (error) {
      throw fieldError('options', `Invalid JSON: ${(error as Error).message}`);
    }
  }
  if (!isOptionList(list)) {
    throw fieldError('options', 'Expected a list of {"name": ..., "value": ...} with a boolean, number or string value.');
  }
  return list;
}

/**
 * Checks options against the nodes a task may run on (the chosen node, or every online node when one is
 * assigned automatically). With no node to ask, the node checks them at submission instead.
 */
export function checkOptions(options: OptionPair[], nodes: ProcessingNode[]): void {
  const specs = commonOptions(nodes) as EngineOption[];
  if (specs.length === 0) return;
  const known = new Set(specs.map((spec) => spec.name));
  const unknown = options.filter((option) => !known.has(option.name)).map((option) => option.name);
  if (unknown.length) throw fieldError('options', `Unknown option${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`);
  const result = validateOptions(specs, options);
  if (!result.ok) {
    let messages: string[];
    try {
      messages = (JSON.parse(result.error) as { name: string; error: string }[]).map((e) => `${e.name}: ${e.error}`);
    } catch {
      messages = [result.error];
    }
    throw fieldErrors({ options: messages });
  }
}
