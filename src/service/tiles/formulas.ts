// The vegetation indices the engine draws tiles in (WebODM's `formula`) and the band letters a `bands` order is
// written with, as the engine's `formulas` command lists them: the formulas are written once, in the engine.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { engineEnvironment } from '../../protocol/environment.ts';

const execFileAsync = promisify(execFile);

export interface FormulaList {
  /** Formula names, such as NDVI and VARI. */
  formulas: string[];
  /** Band letters, such as R, G, B, N and Re. */
  bands: string[];
}

const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');

/** Asks the engine for its formulas; an engine that cannot answer is an error (the tile asked for is a 500). */
export async function engineFormulas(enginePath: string, timeoutMs = 60_000): Promise<FormulaList> {
  const { stdout } = await execFileAsync(enginePath, ['formulas'], { env: engineEnvironment(), timeout: timeoutMs, killSignal: 'SIGKILL' });
  const list = JSON.parse(stdout) as Partial<FormulaList>;
  if (!isStrings(list.formulas) || !isStrings(list.bands)) throw new Error(`${enginePath} formulas did not print {formulas, bands}`);
  return { formulas: list.formulas, bands: list.bands };
}
