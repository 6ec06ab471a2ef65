// A task's processing options, checked before the task is accepted: a list of {name, value} (or its JSON text)
// whose values the chosen node's /options allow, so that a mistake is a 400 now rather than a failed task later.
// Names the node does not offer are kept and ignored, as NodeODM ignores them (WebODM's presets name options
// that not every engine has); the task's console names them when the task goes to a node.
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

/** The options a node offers, and those it does not (which it would ignore). */
export function splitByNode(options: OptionPair[], node: ProcessingNode): { offered: OptionPair[]; ignored: string[] } {
  const specs = JSON.parse(node.available_options) as EngineOption[];
  // A node that has not listed its options yet decides for itself.
  if (specs.length === 0) return { offered: options, ignored: [] };
  const names = new Set(specs.map((spec) => spec.name));
  return {
    offered: options.filter((option) => names.has(option.name)),
    ignored: options.filter((option) => !names.has(option.name)).map((option) => option.name),
  };
}

/**
 * Checks options against the nodes a task may run on (the chosen node, or every online node when one is
 * assigned automatically). With no node to ask, the node checks them at submission instead.
 */
export function checkOptions(options: OptionPair[], nodes: ProcessingNode[]): void {
  const specs = commonOptions(nodes) as EngineOption[];
  if (specs.length === 0) return;
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
