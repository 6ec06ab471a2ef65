// The fields of /task/new and /task/new/init, checked and typed once, when the task is submitted.
import { parseOutputs } from './archive.ts';
import type { TaskFields } from './model.ts';
import { validateOptions, withPostProcessing, type EngineOption } from '../protocol/options.ts';

export type FieldsResult = { ok: true; fields: TaskFields } | { ok: false; error: string };

function text(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

function flag(value: unknown): boolean {
  return value === true || value === 'true' || value === '1';
}

export function parseTaskFields(raw: Record<string, unknown>, specs: readonly EngineOption[], now: number): FieldsResult {
  const options = validateOptions(specs, raw.options);
  if (!options.ok) return options;
  let outputs: string[] | null = null;
  if (text(raw.outputs).trim() !== '') {
    try {
      outputs = parseOutputs(raw.outputs);
    } catch (err) {
      return { ok: false, error: `Invalid outputs: ${(err as Error).message}` };
    }
  }
  const skipPostProcessing = flag(raw.skipPostProcessing);
  const date = Number.parseInt(text(raw.dateCreated), 10);
  const dateCreated = Number.isNaN(date) ? now : date;
  const name = text(raw.name);
  return {
    ok: true,
    fields: {
      name: name !== '' ? name : `Task of ${new Date(now).toISOString()}`,
      options: withPostProcessing(specs, options.options, skipPostProcessing),
      ignoredOptions: options.ignored,
      webhook: text(raw.webhook) || null,
      skipPostProcessing,
      outputs: outputs !== null && outputs.length > 0 ? outputs : null,
      dateCreated,
    },
  };
}
