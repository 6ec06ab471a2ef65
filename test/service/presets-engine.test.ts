// The starter presets must only name options that the real engine honours, with values it accepts.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { STARTER_PRESETS } from '../../src/db/migrations.ts';
import { defaultEnginePath } from '../../src/node/server.ts';
import { type EngineOption, validateOptions } from '../../src/protocol/options.ts';

describe('starter presets', () => {
  const engineOptions = JSON.parse(execFileSync(defaultEnginePath(), ['options'], { encoding: 'utf8' })) as EngineOption[];

  it.each(STARTER_PRESETS.map((preset) => [preset.name, preset.options] as const))('%s uses honoured options', (_, options) => {
    const names = new Set(engineOptions.map((option) => option.name));
    for (const option of options) expect(names, option.name).toContain(option.name);
    expect(validateOptions(engineOptions, options)).toMatchObject({ ok: true });
  });

  it('refuses at submission the values the engine would refuse when it runs', () => {
    // The engine refuses fewer than 100 features and a split into one submodel; the published domains say so.
    expect(validateOptions(engineOptions, [{ name: 'min-num-features', value: 50 }])).toMatchObject({ ok: false });
    expect(validateOptions(engineOptions, [{ name: 'split', value: 1 }])).toMatchObject({ ok: false });
    expect(validateOptions(engineOptions, [{ name: 'split-overlap', value: 12.5 }])).toMatchObject({ ok: true });
    expect(validateOptions(engineOptions, [{ name: 'rolling-shutter-readout', value: 32.5 }])).toMatchObject({ ok: true });
  });
});
